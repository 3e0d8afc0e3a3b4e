//! The embedded store: the SDK's in-memory emulator answers every request (through the SDK's
//! own client, as an account would), and a SQLite database in the data directory keeps what it
//! holds across restarts ([`database`]). At start-up the emulator is loaded from the database.
//!
//! A write is visible only once it is durable: it holds its partition from before the emulator
//! applies it until its commit is on disk ([`locks`]). A commit the database refuses (a full
//! disk) is undone in the emulator before the partition is let go, so no reader ever sees it.
//!
//! Request records (the items `app::idempotency` writes for each keyed write, ids starting with
//! [`REQUEST_RECORD_PREFIX`]) are kept in the database only. They are never in the emulator nor
//! in the change index. They are read by their id alone, never listed nor followed by a change
//! feed. And a day of them at a keyed write a second would be 86,400 items of the emulator's
//! memory (about 4 KiB each). The store reads them from the database and commits them with the
//! write they belong to, in the same transaction ([`Durability::request_record`]). A sweep
//! removes them once expired ([`expiry`]).
//!
//! Compiled only with the `embedded` feature; a build without it compiles `absent.rs` in this
//! module's place (see there).

mod batch;
pub(crate) mod checksum;
pub(crate) mod database;
pub(crate) mod emulator;
mod expiry;
#[cfg(any(test, feature = "test-support"))]
pub(crate) mod faulty_disk;
pub(crate) mod legacy;
pub(crate) mod locks;
pub(crate) mod repair;

pub(crate) use expiry::spawn_expiry_sweep;
pub(crate) use expiry::{Expiries, expiry, unix_now};

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use azure_data_cosmos::ContainerClient;
use serde_json::Value;

use super::changes::ChangeIndex;
use super::checkpoint::{self, CheckpointError};
use super::error::ImportMark;
use super::sdk::bounded;
use super::{Changed, Container, MAX_POSITION, OpenError, StoreError};
use crate::model::REQUEST_RECORD_PREFIX;
use database::{Database, Record, Refused};
use locks::{Locks, PartitionGuard};

/// An item: its container, partition key and id.
pub(crate) type ItemKey = (Container, String, String);

/// A request record as the database holds it.
pub(crate) type RecordRow = database::Row;

/// Whether the item `id` is kept in the database only: a request record.
pub(crate) fn on_disk_only(id: &str) -> bool {
    id.starts_with(REQUEST_RECORD_PREFIX)
}

/// An item as the emulator holds it, without what the emulator adds: as it was written.
fn as_written(mut document: Value) -> Value {
    if let Some(fields) = document.as_object_mut() {
        fields.retain(|name, _| {
            !matches!(name.as_str(), "_rid" | "_self" | "_etag" | "_attachments" | "_ts")
        });
    }
    document
}

/// The embedded store's durability: the database, the locks that keep unsettled writes from
/// being seen, and what the local change-feed processors and the expiry sweep follow.
pub struct Durability {
    pub(crate) database: Database,
    locks: Arc<Locks>,
    /// Woken after every commit, so the local change-feed processors need not poll.
    pub(crate) written: Arc<tokio::sync::Notify>,
    /// Which items changed after which write (committed writes only).
    pub(crate) changes: Arc<Mutex<ChangeIndex>>,
    /// The containers through the store's own client, which no injected fault meets: to apply
    /// batches in and to undo refused writes in.
    pub(crate) containers: HashMap<Container, ContainerClient>,
    /// When the items that carry a `ttl` expire: the emulator does not remove them, so the
    /// store does.
    pub(crate) expiries: Arc<Mutex<Expiries>>,
    /// Where the batches' requests go, through the application's client (the tests' faults),
    /// and how many times each reached the emulator; the next batch's number (`batch`).
    batch_requests: emulator::BatchRequests,
    next_batch: std::sync::atomic::AtomicU64,
}

impl Durability {
    /// Starts the database's writer, which records each commit in the change index and the
    /// expiries before acknowledging it.
    pub(crate) fn start(
        mut database: Database,
        connection: rusqlite::Connection,
        faults: Arc<dyn database::Faults>,
        changes: ChangeIndex,
        expiries: Expiries,
        containers: HashMap<Container, ContainerClient>,
        batch_requests: emulator::BatchRequests,
    ) -> Result<Durability, StoreError> {
        let changes = Arc::new(Mutex::new(changes));
        let expiries = Arc::new(Mutex::new(expiries));
        let written = Arc::new(tokio::sync::Notify::new());
        let on_commit = {
            let (changes, expiries) = (changes.clone(), expiries.clone());
            Box::new(move |writes: &[database::Write]| {
                let mut changes = changes.lock().expect("never poisoned");
                let mut expiries = expiries.lock().expect("never poisoned");
                for write in writes {
                    for record in write.records.iter().filter(|record| !on_disk_only(&record.id)) {
                        changes.record(
                            write.container,
                            &write.partition_key,
                            &record.id,
                            write.seq,
                            record.doc.is_some(),
                        );
                        if write.container.expires_items() {
                            let item =
                                (write.container, write.partition_key.clone(), record.id.clone());
                            expiries.set(item, record.expires.filter(|_| record.doc.is_some()));
                        }
                    }
                }
            })
        };
        database.start(connection, faults, on_commit, written.clone())?;
        Ok(Durability {
            database,
            locks: Arc::new(Locks::default()),
            written,
            changes,
            containers,
            expiries,
            batch_requests,
            next_batch: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The locks that keep unsettled writes from being seen: the store takes them around every
    /// read and write.
    pub(crate) fn locks(&self) -> &Arc<Locks> {
        &self.locks
    }

    /// Commits a write the emulator applied (`records`: id and document, `None` for a
    /// deletion), holding `guard` (its partition) until the commit is durable, or refused and
    /// undone. A task of its own, so that a request dropped meanwhile lets go of nothing early.
    pub(crate) async fn commit(
        self: &Arc<Self>,
        container: Container,
        partition_key: &str,
        records: Vec<(String, Option<Value>)>,
        guard: PartitionGuard,
    ) -> Result<(), StoreError> {
        let now = unix_now();
        let ids: Vec<String> = records.iter().map(|(id, _)| id.clone()).collect();
        let records = records
            .into_iter()
            .map(|(id, doc)| Record {
                expires: doc.as_ref().and_then(|doc| expiry(container, doc, now)),
                doc: doc.map(|doc| doc.to_string()),
                id,
            })
            .collect();
        let (_, committed) = self.database.queue(container, partition_key.to_owned(), records);
        let durability = self.clone();
        let partition_key = partition_key.to_owned();
        tokio::spawn(async move {
            let outcome = committed.await;
            if let Err(refused) = &outcome {
                durability.undo(container, &partition_key, &ids, refused).await;
            }
            drop(guard);
            outcome.map_err(Refused::into_store_error)
        })
        .await
        .map_err(|source| StoreError::TaskDied { work: "the write's commit", source })?
    }

    /// Puts the items of a refused write back as the database holds them; the caller still
    /// holds their partition, so no one saw them meanwhile.
    async fn undo(
        self: &Arc<Self>,
        container: Container,
        partition_key: &str,
        ids: &[String],
        refused: &Refused,
    ) {
        self.restore(container, partition_key, ids).await;
        tracing::warn!(
            container = container.name(),
            items = ids.len(),
            why = refused.message,
            "a refused write was undone"
        );
    }

    /// Puts the items `ids` back in the emulator as the database holds them (absent where it
    /// holds none), for a write that was applied and is not to be committed. The caller holds
    /// their partition.
    async fn restore(self: &Arc<Self>, container: Container, partition_key: &str, ids: &[String]) {
        let client = &self.containers[&container];
        // (A request record was never in the emulator: nothing to undo there.)
        let undone: Vec<String> = ids.iter().filter(|id| !on_disk_only(id)).cloned().collect();
        let durable = match self.durable_items(container, partition_key, undone.clone()).await {
            Ok(durable) => durable,
            Err(error) => {
                return tracing::error!(container = container.name(), error = %crate::logging::with_causes(&error), "cannot read an undone write's items back from the database; reads show the write until a restart");
            }
        };
        for (id, durable) in undone.iter().zip(durable) {
            let durable = match durable {
                Ok(durable) => durable.map(|doc| serde_json::from_str::<Value>(&doc)),
                Err(error) => {
                    tracing::error!(container = container.name(), id, error = %crate::logging::with_causes(&error), "cannot read an undone write's item back from the database; reads show the write until a restart");
                    continue;
                }
            };
            let undone = match durable {
                Some(Ok(document)) => {
                    bounded(client.upsert_item(partition_key.to_owned(), id, &document, None))
                        .await
                        .map(drop)
                }
                Some(Err(error)) => {
                    Err(StoreError::json("an undone write's item as the database holds it", error))
                }
                None => match bounded(client.delete_item(partition_key.to_owned(), id, None)).await
                {
                    Err(StoreError::NotFound) => Ok(()),
                    other => other.map(drop),
                },
            };
            if let Err(error) = undone {
                tracing::error!(container = container.name(), id, %error, "cannot undo a write; reads show it until a restart");
            }
        }
    }

    /// Commits `ids` as the emulator holds them now. This is for a write whose request was
    /// dropped while the emulator applied it. Whether or not it was applied, reads, the
    /// database and the change feed then agree. (Its request got no answer, so either outcome
    /// is one it may see.) The partition stays held until then.
    ///
    /// Also for a write that failed: a failure may follow a write applied anyway (its answer
    /// lost, the SDK sent it again, and the second try was refused as a duplicate, 409 or 412).
    /// Where the emulator holds what the file holds, which is the case for nearly every failed
    /// write, nothing is committed.
    pub(crate) async fn commit_as_is(
        self: Arc<Self>,
        container: Container,
        partition_key: String,
        ids: Vec<String>,
        guard: PartitionGuard,
    ) {
        let client = &self.containers[&container];
        let mut records = Vec::with_capacity(ids.len());
        for id in ids {
            let document = match bounded(client.read_item(partition_key.clone(), &id, None)).await {
                Ok(response) => match response.into_model::<Value>() {
                    Ok(document) => Some(as_written(document)),
                    Err(error) => {
                        return tracing::error!(id, %error, "a write whose request was dropped cannot be committed");
                    }
                },
                Err(StoreError::NotFound) => None,
                Err(error) => {
                    return tracing::error!(id, %error, "a write whose request was dropped cannot be committed");
                }
            };
            records.push((id, document));
        }
        let ids = records.iter().map(|(id, _)| id.clone()).collect();
        let durable = match self.durable_items(container, &partition_key, ids).await {
            Ok(durable) => durable,
            Err(error) => {
                return tracing::error!(%error, "a write whose request was dropped cannot be committed");
            }
        };
        // An item the database cannot give back (its checksum does not match, or it is not
        // JSON) is reported, then committed as the emulator holds it, which is what readers saw.
        let same = records.iter().zip(durable).all(|((id, document), durable)| match durable {
            Ok(durable) => match durable.map(|doc| serde_json::from_str::<Value>(&doc)).transpose() {
                Ok(durable) => durable == *document,
                Err(error) => {
                    tracing::error!(id, %error, "an item of a write whose request was dropped is not JSON in the database; committing it as readers saw it");
                    false
                }
            },
            Err(error) => {
                tracing::error!(id, %error, "an item of a write whose request was dropped cannot be read back from the database; committing it as readers saw it");
                false
            }
        });
        if same {
            return;
        }
        if let Err(error) = self.commit(container, &partition_key, records, guard).await {
            tracing::error!(%error, "a write whose request was dropped cannot be committed");
        }
    }
}

/// The database's reads, off the async workers.
impl Durability {
    /// Runs `read` on tokio's blocking threads. SQLite reads are synchronous and go through the
    /// one reader connection behind a std `Mutex`. So on a worker thread a read that waits for
    /// the lock or the disk stalls every task queued there (the HTTP requests among them). It
    /// uses `spawn_blocking` rather than `block_in_place`, because the latter panics on the
    /// current-thread runtime the tests and the commands run. The lock is never held across an
    /// `await`, so the whole read moves with nothing but an `Arc` of the store.
    async fn off_the_workers<T: Send + 'static>(
        self: &Arc<Self>,
        read: impl FnOnce(&Durability) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let durability = self.clone();
        tokio::task::spawn_blocking(move || read(&durability))
            .await
            .map_err(|source| StoreError::TaskDied { work: "a read of the database", source })?
    }

    /// The items `ids` of the partition as the database holds them (`None`: absent or deleted),
    /// each checked against its checksum: one result per id, in their order.
    async fn durable_items(
        self: &Arc<Self>,
        container: Container,
        partition_key: &str,
        ids: Vec<String>,
    ) -> Result<Vec<Result<Option<String>, StoreError>>, StoreError> {
        let partition_key = partition_key.to_owned();
        self.off_the_workers(move |durability| {
            Ok(ids
                .iter()
                .map(|id| durability.database.durable_item(container, &partition_key, id))
                .collect())
        })
        .await
    }
}

/// The request records, kept in the database only.
impl Durability {
    /// The request record `id` of the partition, as committed, or `None` where there is none or
    /// it expired (the sweep may not have removed it yet).
    pub(crate) async fn request_record(
        self: &Arc<Self>,
        container: Container,
        partition_key: &str,
        id: &str,
    ) -> Result<Option<RecordRow>, StoreError> {
        let (partition_key, id) = (partition_key.to_owned(), id.to_owned());
        let row = self
            .off_the_workers(move |durability| {
                durability.database.durable_row(container, &partition_key, &id)
            })
            .await?;
        let now = unix_now();
        Ok(row.filter(|row| row.expires.is_none_or(|expires| expires > now)))
    }

    /// Removes the request records expired at `now`, at most `limit` of them: one write per
    /// partition, queued under the partition's write lock after checking that each record is
    /// still the expired one (not written again since), all group-committed together. Answers
    /// how many it removed.
    pub(crate) async fn remove_expired_records(
        self: &Arc<Self>,
        now: u64,
        limit: usize,
    ) -> Result<usize, StoreError> {
        let mut expired = self
            .off_the_workers(move |durability| {
                durability.database.expired_with_prefix(REQUEST_RECORD_PREFIX, now, limit)
            })
            .await?;
        expired.sort();
        let mut partitions: Vec<((Container, String), Vec<String>)> = Vec::new();
        for (container, partition_key, id) in expired {
            match partitions.last_mut() {
                Some((key, ids)) if *key == (container, partition_key.clone()) => ids.push(id),
                _ => partitions.push(((container, partition_key), vec![id])),
            }
        }
        let mut pending = Vec::with_capacity(partitions.len());
        for ((container, partition_key), ids) in partitions {
            let guard = self.locks.write(container, &partition_key).await;
            let key = partition_key.clone();
            let records: Vec<Record> = self
                .off_the_workers(move |durability| {
                    let mut records = Vec::with_capacity(ids.len());
                    for id in ids {
                        let row = durability.database.durable_row(container, &key, &id)?;
                        if row.is_some_and(|row| row.expires.is_some_and(|expires| expires <= now))
                        {
                            records.push(Record { id, doc: None, expires: None });
                        }
                    }
                    Ok(records)
                })
                .await?;
            let removing = records.len();
            if removing == 0 {
                continue;
            }
            let (_, committed) = self.database.queue(container, partition_key, records);
            pending.push((guard, removing, committed));
        }
        let mut removed = 0;
        for (guard, removing, committed) in pending {
            committed.await.map_err(Refused::into_store_error)?;
            drop(guard);
            removed += removing;
        }
        Ok(removed)
    }
}

impl Durability {
    /// Ends the repair the database marks unfinished ([`repair`]), once the names and copies are
    /// made again: from then on the blog starts. Every write the repair made is committed by
    /// then, so the writer is idle and this connection takes the write lock at once.
    pub(crate) fn finish_repair(&self) -> Result<(), StoreError> {
        let path = self.database.path();
        self.database.finish_repair().map_err(|error| {
            StoreError::database(
                format!("cannot record the repair of {} as finished", path.display()),
                error,
            )
        })
    }
}

impl Durability {
    /// The mark of an import that writes into this store ([`ImportMark`]), if there is one.
    pub(crate) fn import_mark(&self) -> Result<Option<ImportMark>, StoreError> {
        let path = self.database.path();
        let failed = |error| {
            StoreError::database(
                format!("cannot read the mark of an import in {}", path.display()),
                error,
            )
        };
        let Some(mark) = self.database.import_mark().map_err(failed)? else { return Ok(None) };
        serde_json::from_str(&mark).map(Some).map_err(|error| {
            failed(rusqlite::Error::FromSqlConversionFailure(
                0,
                rusqlite::types::Type::Text,
                Box::new(error),
            ))
        })
    }

    /// Records that an import writes into this store (`Some`: before its first write; from then
    /// on, the store opens only to an import), or that it has finished (`None`).
    pub(crate) fn mark_import(&self, mark: Option<&ImportMark>) -> Result<(), StoreError> {
        let path = self.database.path();
        let text = mark.map(|mark| serde_json::to_string(mark).expect("a mark is JSON"));
        self.database.set_import_mark(text.as_deref()).map_err(|error| {
            StoreError::database(format!("cannot record the import in {}", path.display()), error)
        })
    }
}

/// What the local change-feed processors follow.
impl Durability {
    /// The embedded store's position in its write numbering: every write numbered up to it is
    /// committed (or was refused and undone).
    pub fn write_position(&self) -> u64 {
        self.database.settled()
    }

    /// Woken after every write to the embedded store.
    pub(crate) fn write_signal(&self) -> Arc<tokio::sync::Notify> {
        self.written.clone()
    }

    /// At most `limit` items of `container` whose last write on the embedded store came after
    /// position `after`, oldest change first.
    pub(crate) fn changed_after(&self, container: Container, after: u64, limit: usize) -> Changed {
        let settled = self.database.settled();
        let changes = self.changes.lock().expect("the change index's lock is never poisoned");
        changes.changed_after(container, after, settled, limit)
    }

    /// Whether the item's last write on the embedded store is on disk (always, on other
    /// backends). A version not on disk must not reach a copy, which a crash would leave showing
    /// a write that never happened. Reads wait for a partition's pending writes, so a version
    /// read is durable; the change index lists committed writes only, so this holds for any
    /// item the index knows. (Kept for the processors, which check it after each read.)
    pub(crate) fn is_settled(&self, container: Container, partition_key: &str, id: &str) -> bool {
        let settled = self.database.settled();
        let changes = self.changes.lock().expect("the change index's lock is never poisoned");
        changes.last_write(container, partition_key, id).is_none_or(|seq| seq <= settled)
    }
}

/// Opens the database in `dir`, importing an earlier store's files first if they are there,
/// and checks it and the processors' positions beside it.
pub(crate) fn open(
    dir: &Path,
    opening: database::Opening,
) -> Result<(Database, rusqlite::Connection), OpenError> {
    let (database, mut connection) = Database::open(dir, opening)?;
    if legacy::present(dir) {
        import_legacy(dir, &database, &mut connection)?;
        drop(database);
        return open(dir, opening);
    }
    if let Err(beyond) = check_positions(dir, database.last_seq()) {
        // A row written after the last write recorded is the cause, where there is one: the
        // file's record of its last write was lowered, and the position is right.
        database.check_written_after_last(&connection)?;
        return Err(beyond.into());
    }
    Ok((database, connection))
}

/// The meta key the import records in the transaction that writes the imported items: where it
/// is, the earlier store's files are done with.
const IMPORTED: &str = "imported_journal";

/// Imports the earlier store's files in `dir`, then renames them away. The database is asked
/// first, not the files: a crash after the import's commit leaves both files, or the journal
/// alone when it came between the two renames, which read as a pair would be refused as half
/// of one. Those are renamed, finishing the import, and never read.
fn import_legacy(
    dir: &Path,
    database: &Database,
    connection: &mut rusqlite::Connection,
) -> Result<(), OpenError> {
    let damaged =
        |error| StoreError::database(format!("cannot read {}", database.path().display()), error);
    if database::has_marker(connection, IMPORTED).map_err(damaged)? {
        tracing::info!(dir = %dir.display(), "the earlier store's files were imported before a restart: renaming what is left of them");
    } else {
        import_files(dir, database, connection)?;
    }
    legacy::set_aside(dir)
}

/// Reads the earlier store's files in `dir`, refusing damage, and commits their items, with
/// the [`IMPORTED`] record, in one transaction into the database, which must be empty.
fn import_files(
    dir: &Path,
    database: &Database,
    connection: &mut rusqlite::Connection,
) -> Result<(), OpenError> {
    let damaged =
        |error| StoreError::database(format!("cannot read {}", database.path().display()), error);
    if !database::is_empty(connection).map_err(damaged)? {
        return Err(OpenError::TwoStores { database: database.path().to_owned() });
    }
    let imported = legacy::read(dir)?;
    // The earlier store gave numbers it never journaled (to redeliver undone writes), so a
    // processor may legitimately be past the journal's last write: the numbering goes on after
    // the furthest position, as that store's did.
    let mut last_seq = imported.last_seq;
    for (path, position) in checkpoint::all(dir).map_err(StoreError::from)? {
        if position > MAX_POSITION {
            return Err(StoreError::from(CheckpointError::BeyondLastWrite {
                path,
                position,
                last: imported.last_seq,
            })
            .into());
        }
        last_seq = last_seq.max(position);
    }
    database::import(database.path(), connection, &imported.rows, last_seq, IMPORTED)?;
    tracing::info!(
        items = imported.rows.len(),
        "the earlier store's snapshot and journal were imported"
    );
    Ok(())
}

/// Refuses a processor's position beyond `last_seq`, the last write the database numbered. No
/// processor can have got there (the numbering is committed with the writes). So the file is
/// damaged or from another copy, and a processor would wait for writes up to it forever. A
/// checkpoint that cannot be read is refused here too, before anything is served.
fn check_positions(dir: &Path, last_seq: u64) -> Result<(), StoreError> {
    match checkpoint::all(dir)?.into_iter().find(|(_, position)| *position > last_seq) {
        Some((path, position)) => {
            Err(CheckpointError::BeyondLastWrite { path, position, last: last_seq }.into())
        }
        None => Ok(()),
    }
}
