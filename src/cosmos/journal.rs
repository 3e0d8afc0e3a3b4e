//! Durability for the embedded store: the SDK's in-memory emulator keeps nothing across a
//! restart, so every write it acknowledges is also appended to a journal on disk, and the
//! journal is replayed into a fresh emulator at start-up.
//!
//! The journal records the state each write left (the item, or its deletion), not the request,
//! so replaying is a sequence of upserts and deletes with no preconditions to re-check. One line
//! holds all the records of one write (a transactional batch is one line), so a line torn by
//! `kill -9` loses only a write that was never acknowledged. Appends are group-committed: one
//! `fdatasync` covers every write that arrived meanwhile, and a write is acknowledged only
//! after its line is on disk.
//!
//! Files in the data directory: `snapshot.jsonl` (the live items at the last start-up, in
//! write order) and `journal.jsonl` (the writes since).

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{mpsc, oneshot};

const SNAPSHOT: &str = "snapshot.jsonl";
const JOURNAL: &str = "journal.jsonl";
const LOCK: &str = "lock";

/// The state one write left behind for one item.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Container name.
    pub c: String,
    /// Partition key value.
    pub pk: String,
    pub id: String,
    /// The item as written, or `None` when it was deleted.
    pub doc: Option<Value>,
    /// The write's position in the journal: every write gets the next number, in the order the
    /// store applied them. The change-feed processors keep their position as such a number.
    #[serde(default)]
    pub seq: u64,
}

type Ack = oneshot::Sender<io::Result<()>>;

/// The append side of the journal: a writer thread that group-commits lines.
pub struct Journal {
    lines: mpsc::UnboundedSender<(String, Ack)>,
    /// The `seq` of the last write appended.
    last_seq: AtomicU64,
    /// Held while the journal is open: one process per data directory.
    _lock: File,
}

impl Journal {
    /// Reads the data directory, and returns the live items to load (in the order they were last
    /// written) with a journal ready to append to. The items read are first compacted into a new
    /// snapshot, so the journal starts empty and start-up time stays proportional to the data,
    /// not to its history.
    pub fn open(dir: &Path) -> io::Result<(Journal, Vec<Record>)> {
        fs::create_dir_all(dir)?;
        let lock = OpenOptions::new().create(true).truncate(false).write(true).open(dir.join(LOCK))?;
        lock.try_lock().map_err(|_| {
            io::Error::new(io::ErrorKind::WouldBlock, format!("{} is in use by another handler process", dir.display()))
        })?;
        let mut live = LiveItems::default();
        for name in [SNAPSHOT, JOURNAL] {
            read_lines(&dir.join(name), &mut live)?;
        }
        let last_seq = AtomicU64::new(live.last_seq);
        let items = live.into_items();
        write_snapshot(dir, &items)?;
        let file = OpenOptions::new().create(true).write(true).truncate(true).open(dir.join(JOURNAL))?;
        file.sync_all()?;
        let (lines, receiver) = mpsc::unbounded_channel();
        std::thread::Builder::new().name("journal".into()).spawn(move || write_loop(file, receiver))?;
        Ok((Journal { lines, last_seq, _lock: lock }, items))
    }

    /// Queues the records of one write, and returns the write's number with a future that
    /// resolves once they are on disk. Call it in the order the store applied the writes: that
    /// order is the replay order.
    pub fn append(&self, mut records: Vec<Record>) -> (u64, impl Future<Output = io::Result<()>> + use<>) {
        let seq = self.last_seq.fetch_add(1, Ordering::SeqCst) + 1;
        records.iter_mut().for_each(|record| record.seq = seq);
        let (ack, done) = oneshot::channel();
        let mut line = serde_json::to_string(&records).expect("records serialize");
        line.push('\n');
        let queued = self.lines.send((line, ack));
        (seq, async move {
            queued.map_err(|_| io::Error::other("the journal writer has stopped"))?;
            done.await.map_err(|_| io::Error::other("the journal writer has stopped"))?
        })
    }

    /// The `seq` of the last write appended: every write up to it has been applied to the store.
    pub fn last_seq(&self) -> u64 {
        self.last_seq.load(Ordering::SeqCst)
    }
}

fn write_loop(mut file: File, mut receiver: mpsc::UnboundedReceiver<(String, Ack)>) {
    let mut acks = Vec::new();
    let mut buffer = String::new();
    while let Some((line, ack)) = receiver.blocking_recv() {
        buffer.push_str(&line);
        acks.push(ack);
        // Everything that queued up while the last sync ran shares the next one.
        while let Ok((line, ack)) = receiver.try_recv() {
            buffer.push_str(&line);
            acks.push(ack);
        }
        let written = file.write_all(buffer.as_bytes()).and_then(|()| file.sync_data());
        buffer.clear();
        for ack in acks.drain(..) {
            let _ = ack.send(written.as_ref().map(|_| ()).map_err(|error| io::Error::new(error.kind(), error.to_string())));
        }
        if written.is_err() {
            // A write that failed may have left part of a line: acknowledge nothing after it.
            tracing::error!(error = ?written, "the journal can no longer be written; writes will fail");
            break;
        }
    }
}

/// The newest state per item, ordered by when it was last written.
#[derive(Default)]
struct LiveItems {
    order: BTreeMap<u64, Record>,
    position: HashMap<(String, String, String), u64>,
    next: u64,
    last_seq: u64,
}

impl LiveItems {
    fn apply(&mut self, record: Record) {
        self.last_seq = self.last_seq.max(record.seq);
        let key = (record.c.clone(), record.pk.clone(), record.id.clone());
        if let Some(old) = self.position.remove(&key) {
            self.order.remove(&old);
        }
        if record.doc.is_some() {
            self.position.insert(key, self.next);
            self.order.insert(self.next, record);
        }
        self.next += 1;
    }

    fn into_items(self) -> Vec<Record> {
        self.order.into_values().collect()
    }
}

fn read_lines(path: &Path, live: &mut LiveItems) -> io::Result<()> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    let mut lines = BufReader::new(file).lines().enumerate().peekable();
    while let Some((number, line)) = lines.next() {
        let line = line?;
        match serde_json::from_str::<Vec<Record>>(&line) {
            Ok(records) => records.into_iter().for_each(|record| live.apply(record)),
            // The last line may be torn by a crash mid-append: that write was never acknowledged.
            Err(_) if lines.peek().is_none() => {
                tracing::warn!(path = %path.display(), line = number + 1, "ignoring a torn last line (an unacknowledged write)");
            }
            Err(error) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} line {} is corrupt: {error}", path.display(), number + 1),
                ));
            }
        }
    }
    Ok(())
}

/// Replaces the snapshot atomically: write a temporary file, sync it, rename it over the old.
fn write_snapshot(dir: &Path, items: &[Record]) -> io::Result<()> {
    let temporary: PathBuf = dir.join(format!("{SNAPSHOT}.tmp"));
    let mut file = io::BufWriter::new(File::create(&temporary)?);
    for record in items {
        serde_json::to_writer(&mut file, std::slice::from_ref(record))?;
        file.write_all(b"\n")?;
    }
    file.into_inner().map_err(|error| error.into_error())?.sync_all()?;
    fs::rename(&temporary, dir.join(SNAPSHOT))?;
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn put(id: &str, n: i64) -> Record {
        Record { c: "posts".into(), pk: id.into(), id: id.into(), doc: Some(json!({"id": id, "n": n})), seq: 0 }
    }

    fn delete(id: &str) -> Record {
        Record { c: "posts".into(), pk: id.into(), id: id.into(), doc: None, seq: 0 }
    }

    #[tokio::test]
    async fn replay_yields_the_last_state_of_each_item_in_last_write_order() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, items) = Journal::open(dir.path()).unwrap();
        assert!(items.is_empty());
        journal.append(vec![put("a", 1), put("b", 1)]).1.await.unwrap();
        journal.append(vec![put("a", 2)]).1.await.unwrap();
        journal.append(vec![put("c", 1), delete("b")]).1.await.unwrap();
        assert_eq!(journal.last_seq(), 3);
        drop(journal);

        let (journal, items) = Journal::open(dir.path()).unwrap();
        assert_eq!(items, vec![Record { seq: 2, ..put("a", 2) }, Record { seq: 3, ..put("c", 1) }]);
        assert_eq!(journal.last_seq(), 3, "numbering goes on after a restart");
        drop(journal);
        // Compacted into the snapshot; a second start-up reads the same from it alone.
        let (_journal, again) = Journal::open(dir.path()).unwrap();
        assert_eq!(again, items);
    }

    #[tokio::test]
    async fn a_torn_last_line_is_an_unacknowledged_write_and_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, _) = Journal::open(dir.path()).unwrap();
        journal.append(vec![put("a", 1)]).1.await.unwrap();
        drop(journal);
        let mut file = OpenOptions::new().append(true).open(dir.path().join(JOURNAL)).unwrap();
        file.write_all(br#"[{"c":"posts","pk":"b","id":"b","doc":{"id"#).unwrap();
        drop(file);
        let (_journal, items) = Journal::open(dir.path()).unwrap();
        assert_eq!(items, vec![Record { seq: 1, ..put("a", 1) }]);
    }

    #[tokio::test]
    async fn one_process_per_data_directory() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, _) = Journal::open(dir.path()).unwrap();
        let error = Journal::open(dir.path()).err().expect("a second open is refused");
        assert!(error.to_string().contains("in use"), "{error}");
        drop(journal);
        Journal::open(dir.path()).expect("free again once the first is closed");
    }

    #[tokio::test]
    async fn corruption_before_the_last_line_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(JOURNAL), "not json\n[]\n").unwrap();
        let error = Journal::open(dir.path()).err().expect("corruption is reported");
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
    }
}
