//! The writer thread: every write is numbered and queued, and the thread commits what queued
//! up while its last commit ran as one transaction, one fsync for all (group commit), moving the
//! tallies in the same transaction. Refusals (a full disk, a fault injected by a test) undo the
//! whole group and are reported to each of its writers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};

use rusqlite::{Connection, ErrorCode, OptionalExtension, params};
use tokio::sync::oneshot;

use super::super::checksum;
use super::tally::{Tally, move_tallies};
use super::{Database, Record, Write};
use crate::cosmos::{Container, StoreError};

/// The most writes one transaction commits.
const MAX_GROUP: usize = 1024;

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
            StoreError::NotCommitted { reason: self.message }
        }
    }
}

pub(super) type Ack = oneshot::Sender<Result<(), Refused>>;

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

impl Database {
    /// Starts the writer thread on `connection`: from here on, writes can be queued.
    pub(crate) fn start(
        &mut self,
        connection: Connection,
        faults: Arc<dyn Faults>,
        on_commit: OnCommit,
        written: Arc<tokio::sync::Notify>,
    ) -> Result<(), StoreError> {
        let (messages, receiver) = mpsc::channel();
        let writer =
            Writer { connection, faults, on_commit, settled: self.settled.clone(), written };
        let writer = std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || writer.run(receiver))
            .map_err(|error| StoreError::io("cannot start the database's writer", error))?;
        self.messages = Some(messages);
        self.writer = Some(writer);
        Ok(())
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
        let stopped =
            || Refused { disk_full: false, message: "the database's writer has stopped".into() };
        let queued = match &self.messages {
            Some(messages) => messages
                .send((Write { seq, container, partition_key, records }, ack))
                .map_err(|_| stopped()),
            None => Err(stopped()),
        };
        drop(last_seq);
        (seq, async move {
            queued?;
            done.await.unwrap_or_else(|_| Err(stopped()))
        })
    }
}

/// The writer thread's state.
pub(super) struct Writer {
    pub(super) connection: Connection,
    pub(super) faults: Arc<dyn Faults>,
    pub(super) on_commit: OnCommit,
    pub(super) settled: Arc<AtomicU64>,
    /// Woken after each group is acknowledged.
    pub(super) written: Arc<tokio::sync::Notify>,
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

    /// Commits the group in one transaction; on failure nothing of it is left. The tallies of
    /// the partitions and containers it touched are moved in the same transaction. Each row's
    /// old checksum is read before it is replaced or deleted (a point read of a page the write
    /// itself then changes). Each partition's tally is written once per group.
    pub(super) fn commit(&mut self, writes: &[Write]) -> rusqlite::Result<()> {
        let transaction =
            self.connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut before = transaction.prepare_cached(
                "SELECT sum FROM items WHERE container = ?1 AND pk = ?2 AND id = ?3",
            )?;
            let mut upsert = transaction.prepare_cached(
                "INSERT INTO items (container, pk, id, doc, seq, expires, sum) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (container, pk, id) DO UPDATE SET doc = excluded.doc, seq = excluded.seq,
                 expires = excluded.expires, sum = excluded.sum",
            )?;
            let mut delete = transaction
                .prepare_cached("DELETE FROM items WHERE container = ?1 AND pk = ?2 AND id = ?3")?;
            let mut moved: HashMap<(Container, &str), Tally> = HashMap::new();
            for write in writes {
                for record in &write.records {
                    let key = (write.container, write.partition_key.as_str(), record.id.as_str());
                    let tally = moved.entry((key.0, key.1)).or_default();
                    let old: Option<u32> = before
                        .query_row(params![key.0.name(), key.1, key.2], |row| row.get(0))
                        .optional()?;
                    if let Some(old) = old {
                        tally.remove(checksum::contribution(key.0, key.1, key.2, old));
                    }
                    match &record.doc {
                        Some(doc) => {
                            let sum = checksum::of_row(
                                key.0,
                                key.1,
                                key.2,
                                doc,
                                write.seq,
                                record.expires,
                            );
                            upsert.execute(params![
                                key.0.name(),
                                key.1,
                                key.2,
                                doc,
                                write.seq,
                                record.expires,
                                sum
                            ])?;
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
