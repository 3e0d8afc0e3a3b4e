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
//! Files in the data directory: `snapshot.jsonl` (the live items at the last compaction, in
//! write order) and `journal.jsonl` (the writes since). Every line is `<crc32> <json>`, the
//! checksum of the JSON in 8 hex digits, so damage is detected instead of replayed. The first
//! line of each is a header with the compaction's generation, so a file missing or swapped for
//! another copy is detected too. Start-up reads both and appends to the journal as it is (it
//! needs no space beyond what the data uses); compaction writes both anew once the journal has
//! grown past the snapshot, and a compaction that fails leaves them as they were.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

const SNAPSHOT: &str = "snapshot.jsonl";
const JOURNAL: &str = "journal.jsonl";
const LOCK: &str = "lock";
/// The journal is compacted once it holds this many bytes and more than the snapshot: often
/// enough that it stays within about twice the data, rarely enough that the pause (a rewrite
/// of the snapshot, while the writes wait) is paid once per several thousand writes.
pub(crate) const COMPACT_AFTER: u64 = 1 << 20;

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
    pub seq: u64,
    /// When the item expires (Unix seconds), if it carries a `ttl`: the time of the write plus
    /// the ttl, which a restart must not reset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exp: Option<u64>,
}

/// A live item as [`Journal::open`] returns it to load, read from its line without copying.
#[derive(Deserialize)]
pub struct LiveItem<'a> {
    /// Container name.
    #[serde(borrow)]
    pub c: Cow<'a, str>,
    #[serde(borrow)]
    pub pk: Cow<'a, str>,
    #[serde(borrow)]
    pub id: Cow<'a, str>,
    /// The item's JSON as written.
    #[serde(borrow)]
    pub doc: &'a RawValue,
    pub seq: u64,
    /// When it expires, if it carries a `ttl` (see [`Record::exp`]).
    #[serde(default)]
    pub exp: Option<u64>,
}

impl<'a> LiveItem<'a> {
    /// The item of a line [`Journal::open`] returned.
    pub fn parse(line: &'a str) -> Result<LiveItem<'a>, String> {
        let [item]: [LiveItem; 1] = serde_json::from_str(line).map_err(|error| error.to_string())?;
        Ok(item)
    }
}

/// The first line of the snapshot and of the journal.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Header {
    /// Which compaction wrote the file: the snapshot and its journal have the same one (the
    /// journal one less for a moment during a compaction, see [`Writer::compact`]).
    generation: u64,
    /// Every write numbered up to it is in the snapshot.
    through: u64,
}

/// The file operations of the journal that can fail for want of space; tests wrap them to
/// inject faults.
pub(crate) trait Disk: Send + Sync + 'static {
    fn write(&self, _path: &Path, file: &mut File, bytes: &[u8]) -> io::Result<()> {
        file.write_all(bytes)
    }
    fn sync(&self, _path: &Path, file: &File) -> io::Result<()> {
        file.sync_data()
    }
}

/// The disk as it is.
pub(crate) struct RealDisk;
impl Disk for RealDisk {}

type Ack = oneshot::Sender<io::Result<()>>;

enum Message {
    /// The line of write `seq`, and its records for the durable copy of the items.
    Write { seq: u64, records: Vec<Record>, line: String, ack: Ack },
    /// The writes refused since the last failure have been undone: try writing again.
    Resume,
}

/// The append side of the journal: a writer thread that group-commits lines.
pub struct Journal {
    /// `None` once dropped, which ends the writer thread.
    messages: Option<mpsc::UnboundedSender<Message>>,
    /// Joined on drop, so the data directory is let go only once nothing writes to it.
    writer: Option<std::thread::JoinHandle<()>>,
    /// The last number given to a write.
    last_seq: AtomicU64,
    /// Every write numbered up to it is on disk, or was refused and undone.
    settled: Arc<AtomicU64>,
    /// The items as the files on disk hold them: what a refused write is undone to, and what a
    /// compaction writes.
    durable: Arc<Mutex<LiveItems>>,
    /// The data directory, where the durable items are read back from.
    dir: PathBuf,
    /// Held while the journal is open: one process per data directory.
    _lock: File,
}

impl Journal {
    /// Reads the data directory, and returns the live items to load (in the order they were last
    /// written) with a journal ready to append to.
    #[cfg(test)]
    pub fn open(dir: &Path) -> io::Result<(Journal, Vec<Box<str>>)> {
        Self::open_with(dir, Arc::new(RealDisk), COMPACT_AFTER)
    }

    /// [`Journal::open`] on `disk`, compacting once the journal has `compact_after` bytes.
    pub(crate) fn open_with(dir: &Path, disk: Arc<dyn Disk>, compact_after: u64) -> io::Result<(Journal, Vec<Box<str>>)> {
        fs::create_dir_all(dir)?;
        let lock = OpenOptions::new().create(true).truncate(false).write(true).open(dir.join(LOCK))?;
        lock.try_lock().map_err(|_| {
            io::Error::new(io::ErrorKind::WouldBlock, format!("{} is in use by another handler process", dir.display()))
        })?;
        let (snapshot_path, journal_path) = (dir.join(SNAPSHOT), dir.join(JOURNAL));
        // The snapshot's items, then the journal's writes after what the snapshot covers: each
        // line is filed as it is read, by where it is, so start-up does not hold the items.
        let mut live = LiveItems::default();
        let mut last_seq = 0;
        let snapshot = DataFile::read(&snapshot_path, false, |line, location| {
            live.apply_line(line, 0, Location { in_journal: false, ..location }).map(|seq| last_seq = last_seq.max(seq))
        })?;
        let snapshot_through = snapshot.as_ref().map_or(0, |snapshot| snapshot.header.through);
        let journal = DataFile::read(&journal_path, true, |line, location| {
            live.apply_line(line, snapshot_through, location).map(|seq| last_seq = last_seq.max(seq))
        })?;
        let (snapshot, journal) = match (snapshot, journal) {
            (None, None) => {
                let header = Header { generation: 1, through: 0 };
                write_atomically(&*disk, &journal_path, header, &[])?;
                write_atomically(&*disk, &snapshot_path, header, &[])?;
                let ignore = |_: &str, _: Location| Ok(());
                (DataFile::read(&snapshot_path, false, ignore)?, DataFile::read(&journal_path, true, ignore)?)
            }
            (None, Some(journal)) if journal.header.generation == 1 && journal.writes == 0 => {
                // A first start that stopped between writing the two: nothing was written yet.
                write_atomically(&*disk, &snapshot_path, journal.header, &[])?;
                (DataFile::read(&snapshot_path, false, |_, _| Ok(()))?, Some(journal))
            }
            other => other,
        };
        let (snapshot, journal) = match (snapshot, journal) {
            (Some(snapshot), Some(journal)) => (snapshot, journal),
            (Some(snapshot), None) => {
                return Err(invalid(format!(
                    "{} is missing next to {} (generation {}): the writes since the last compaction are in it. \
                     Put it back (from wherever it went, or a backup of the data directory), or move the data \
                     directory away to start empty",
                    journal_path.display(),
                    snapshot_path.display(),
                    snapshot.header.generation
                )));
            }
            (None, Some(journal)) => {
                return Err(invalid(format!(
                    "{} is missing next to {} (generation {}): the items written before the last compaction are in it. \
                     Put it back (from wherever it went, or a backup of the data directory), or move the data \
                     directory away to start empty",
                    snapshot_path.display(),
                    journal_path.display(),
                    journal.header.generation
                )));
            }
            (None, None) => unreachable!("both were just written"),
        };
        // The journal is one generation behind when a compaction stopped between its two
        // renames: its writes up to the snapshot's `through` are in the snapshot.
        let (generation, through) = (snapshot.header.generation, snapshot.header.through);
        if journal.header.generation != generation && journal.header.generation + 1 != generation {
            return Err(invalid(format!(
                "{} is generation {} but {} is generation {}: they are not from the same copy of the data \
                 directory. Put back the pair that belongs together (from a backup of the whole directory)",
                snapshot_path.display(),
                generation,
                journal_path.display(),
                journal.header.generation
            )));
        }
        // The journal's header is the compaction's: the numbers go on from there even when no
        // write has followed yet.
        let last_seq = last_seq.max(through).max(journal.header.through);
        let file = OpenOptions::new().append(true).open(&journal_path)?;
        if let Some(line) = journal.torn_line {
            tracing::warn!(path = %journal_path.display(), line, "dropping a torn last line (a write that was never acknowledged)");
            // Cut so that the next append starts a line of its own.
            file.set_len(journal.good_len)?;
            file.sync_all()?;
        }
        let items = live.lines(dir)?.into_iter().map(|(_, line)| line.into_boxed_str()).collect();
        let durable = Arc::new(Mutex::new(live));
        let settled = Arc::new(AtomicU64::new(last_seq));
        let writer = Writer {
            dir: dir.to_owned(),
            disk,
            file,
            good_len: journal.good_len,
            generation,
            snapshot_len: snapshot.good_len,
            compact_after,
            next_compaction: 0,
            durable: durable.clone(),
            settled: settled.clone(),
        };
        let (messages, receiver) = mpsc::unbounded_channel();
        let writer = std::thread::Builder::new().name("journal".into()).spawn(move || writer.run(receiver))?;
        let journal = Journal {
            messages: Some(messages),
            writer: Some(writer),
            last_seq: AtomicU64::new(last_seq),
            settled,
            durable,
            dir: dir.to_owned(),
            _lock: lock,
        };
        Ok((journal, items))
    }

    /// Queues the records of one write, and returns the write's number with a future that
    /// resolves once they are on disk. Call it in the order the store applied the writes: that
    /// order is the replay order.
    pub fn append(&self, mut records: Vec<Record>) -> (u64, impl Future<Output = io::Result<()>> + use<>) {
        let seq = self.next_seq();
        records.iter_mut().for_each(|record| record.seq = seq);
        let (ack, done) = oneshot::channel();
        let line = encode(&serde_json::to_string(&records).expect("records serialize"));
        let queued = self.send(Message::Write { seq, records, line, ack });
        (seq, async move {
            queued?;
            done.await.map_err(|_| io::Error::other("the journal writer has stopped"))?
        })
    }

    /// A new number, for a change that is not journaled (an undo restores what the journal
    /// already holds).
    pub fn next_seq(&self) -> u64 {
        self.last_seq.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// The number of the last write appended.
    #[cfg(test)]
    pub fn last_seq(&self) -> u64 {
        self.last_seq.load(Ordering::SeqCst)
    }

    /// Every write numbered up to it is on disk, or was refused and undone: the furthest a
    /// change-feed processor may go.
    pub fn settled(&self) -> u64 {
        self.settled.load(Ordering::SeqCst)
    }

    /// Marks everything up to `seq` settled: after an undo, when no write is in flight.
    pub fn settle(&self, seq: u64) {
        self.settled.fetch_max(seq, Ordering::SeqCst);
    }

    /// Numbers the next write after `position`, when a change-feed processor was there already
    /// (its checkpoint may have been saved before a crash lost writes, or after an undo). Call
    /// it before the first write.
    pub fn continue_after(&self, position: u64) {
        self.last_seq.fetch_max(position, Ordering::SeqCst);
        self.settle(position);
    }

    /// The item as the files on disk hold it (`None`: absent or deleted).
    pub fn durable_item(&self, container: &str, partition_key: &str, id: &str) -> io::Result<Option<Value>> {
        self.durable.lock().expect("never poisoned").get(&self.dir, container, partition_key, id)
    }

    /// The writes refused since the last failure have all been undone: the writer may write
    /// again (it refuses every line until then, since each may build on a refused one).
    pub fn resume(&self) {
        let _ = self.send(Message::Resume);
    }

    fn send(&self, message: Message) -> io::Result<()> {
        let stopped = || io::Error::other("the journal writer has stopped");
        self.messages.as_ref().ok_or_else(stopped)?.send(message).map_err(|_| stopped())
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.messages = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// The writer thread's state.
struct Writer {
    dir: PathBuf,
    disk: Arc<dyn Disk>,
    /// The journal, opened to append.
    file: File,
    /// The journal's length up to its last complete line: a failed append is cut back to it.
    good_len: u64,
    generation: u64,
    snapshot_len: u64,
    compact_after: u64,
    /// After a failed compaction, the journal length at which to try again.
    next_compaction: u64,
    durable: Arc<Mutex<LiveItems>>,
    settled: Arc<AtomicU64>,
}

impl Writer {
    fn run(mut self, mut receiver: mpsc::UnboundedReceiver<Message>) {
        self.compact_if_due();
        // Set from a failed append until the writes after it are undone.
        let mut refusing: Option<(io::ErrorKind, String)> = None;
        let mut batch = Vec::new();
        while let Some(message) = receiver.blocking_recv() {
            let mut next = Some(message);
            // Everything that queued up while the last sync ran shares the next one.
            while let Some(message) = next.take().or_else(|| receiver.try_recv().ok()) {
                match message {
                    Message::Write { seq, records, line, ack } => batch.push((seq, records, line, ack)),
                    Message::Resume => {
                        self.flush(&mut batch, &mut refusing);
                        refusing = None;
                    }
                }
            }
            self.flush(&mut batch, &mut refusing);
        }
    }

    fn flush(&mut self, batch: &mut Vec<(u64, Vec<Record>, String, Ack)>, refusing: &mut Option<(io::ErrorKind, String)>) {
        if batch.is_empty() {
            return;
        }
        let start = self.good_len;
        if refusing.is_none()
            && let Err(error) = self.append(batch)
        {
            tracing::error!(%error, "the journal refused a write; it and the writes after it are undone");
            *refusing = Some((error.kind(), error.to_string()));
        }
        match refusing {
            None => {
                let last = batch.last().expect("not empty").0;
                let mut durable = self.durable.lock().expect("never poisoned");
                let mut offset = start;
                for (_, records, line, _) in batch.iter_mut() {
                    let location = Location::of_line(true, offset, &line);
                    std::mem::take(records).iter().for_each(|record| durable.apply(record, location));
                    offset += line.len() as u64;
                }
                drop(durable);
                self.settled.fetch_max(last, Ordering::SeqCst);
                batch.drain(..).for_each(|(_, _, _, ack)| drop(ack.send(Ok(()))));
                self.compact_if_due();
            }
            Some((kind, message)) => {
                for (_, _, _, ack) in batch.drain(..) {
                    let _ = ack.send(Err(io::Error::new(*kind, message.clone())));
                }
            }
        }
    }

    /// Appends the batch's lines and syncs them; on failure the journal is cut back to its last
    /// complete line, so no partial line is left between it and the next append.
    fn append(&mut self, batch: &[(u64, Vec<Record>, String, Ack)]) -> io::Result<()> {
        let path = self.dir.join(JOURNAL);
        if self.file.metadata()?.len() != self.good_len {
            // An earlier cut failed: make it now, before anything is appended after the partial line.
            self.file.set_len(self.good_len)?;
        }
        let bytes: String = batch.iter().map(|(_, _, line, _)| line.as_str()).collect();
        let written = self.disk.write(&path, &mut self.file, bytes.as_bytes()).and_then(|()| self.disk.sync(&path, &self.file));
        match written {
            Ok(()) => {
                self.good_len += bytes.len() as u64;
                Ok(())
            }
            Err(error) => {
                if let Err(cut) = self.file.set_len(self.good_len) {
                    tracing::warn!(%cut, "cannot cut the journal back yet; the next append tries again");
                }
                Err(error)
            }
        }
    }

    fn compact_if_due(&mut self) {
        if self.good_len < self.compact_after.max(self.snapshot_len).max(self.next_compaction) {
            return;
        }
        let started = std::time::Instant::now();
        match self.compact() {
            Ok(()) => {
                self.next_compaction = 0;
                tracing::info!(bytes = self.snapshot_len, took = ?started.elapsed(), "journal compacted into a new snapshot");
            }
            Err(error) => {
                self.next_compaction = self.good_len + self.compact_after;
                tracing::warn!(%error, "cannot compact the journal now (it goes on growing; tried again later)");
            }
        }
    }

    /// Writes the durable items as a new snapshot and starts an empty journal after it, both a
    /// generation up; on failure both files stay as they were and the temporary files are
    /// removed. Runs on the writer thread, so nothing is appended meanwhile.
    fn compact(&mut self) -> io::Result<()> {
        let generation = self.generation + 1;
        let header = Header { generation, through: self.settled.load(Ordering::SeqCst) };
        let (snapshot, journal) = (self.dir.join(SNAPSHOT), self.dir.join(JOURNAL));
        // Held to the end: the items' locations change with the files.
        let mut durable = self.durable.lock().expect("never poisoned");
        let lines = durable.lines(&self.dir)?;
        let new_snapshot = write_temporary(&*self.disk, &snapshot, header, lines.iter().map(|(_, line)| line.as_str()))?;
        let new_journal = match write_temporary(&*self.disk, &journal, header, []) {
            Ok(new_journal) => new_journal,
            Err(error) => {
                let _ = fs::remove_file(temporary(&snapshot));
                return Err(error);
            }
        };
        // From this rename on, the snapshot holds everything: the old journal, one generation
        // behind, is read only for writes after the snapshot's `through`.
        if let Err(error) = fs::rename(temporary(&snapshot), &snapshot) {
            let _ = fs::remove_file(temporary(&snapshot));
            let _ = fs::remove_file(temporary(&journal));
            return Err(error);
        }
        durable.relocate(header, &lines);
        drop(durable);
        self.snapshot_len = new_snapshot.1;
        self.generation = generation;
        if let Err(error) = fs::rename(temporary(&journal), &journal) {
            let _ = fs::remove_file(temporary(&journal));
            return Err(error);
        }
        (self.file, self.good_len) = (new_journal.0, new_journal.1);
        File::open(&self.dir)?.sync_all()
    }
}

/// `<path>.tmp`: where a file is written before it is renamed into place.
fn temporary(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

/// Writes `<path>.tmp` with `header` and the `lines` (the JSON of each), synced; returns it
/// opened to append, with its length. Removes it on failure.
fn write_temporary<'a>(
    disk: &dyn Disk,
    path: &Path,
    header: Header,
    lines: impl IntoIterator<Item = &'a str>,
) -> io::Result<(File, u64)> {
    let temporary = temporary(path);
    let written = (|| {
        // Opened to append (the writer goes on appending to the new journal); one left behind
        // by a crash is replaced.
        let _ = fs::remove_file(&temporary);
        let mut file = OpenOptions::new().create_new(true).append(true).open(&temporary)?;
        let mut buffer = encode_header(header);
        let mut length = 0;
        for line in lines {
            buffer.push_str(&encode(line));
            if buffer.len() >= 1 << 16 {
                disk.write(&temporary, &mut file, buffer.as_bytes())?;
                length += buffer.len() as u64;
                buffer.clear();
            }
        }
        disk.write(&temporary, &mut file, buffer.as_bytes())?;
        length += buffer.len() as u64;
        disk.sync(&temporary, &file)?;
        Ok((file, length))
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written
}

/// Replaces `path` atomically with a file of `header` and `lines`.
fn write_atomically(disk: &dyn Disk, path: &Path, header: Header, lines: &[&str]) -> io::Result<()> {
    write_temporary(disk, path, header, lines.iter().copied())?;
    fs::rename(temporary(path), path).inspect_err(|_| drop(fs::remove_file(temporary(path))))?;
    File::open(path.parent().expect("a file in the data directory"))?.sync_all()
}

/// One line of a data file: the JSON's checksum, a space, the JSON, a newline.
fn encode(json: &str) -> String {
    format!("{:08x} {json}\n", crc32fast::hash(json.as_bytes()))
}

/// The first line of a data file.
fn encode_header(header: Header) -> String {
    encode(&serde_json::to_string(&header).expect("a header serializes"))
}

/// The JSON of a line (without its newline), or why it is damaged.
fn decode(line: &[u8]) -> Result<&str, &'static str> {
    let (Some(checksum), Some(b' ')) = (line.get(..8), line.get(8)) else {
        return Err("it does not start with a checksum");
    };
    let expected = std::str::from_utf8(checksum)
        .ok()
        .and_then(|hex| u32::from_str_radix(hex, 16).ok())
        .ok_or("it does not start with a checksum")?;
    let json = &line[9..];
    if crc32fast::hash(json) != expected {
        return Err("its checksum does not match its content (the line is damaged)");
    }
    std::str::from_utf8(json).map_err(|_| "it is not UTF-8")
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// A snapshot or journal, read and checked; its writes went to the reader's callback.
struct DataFile {
    header: Header,
    /// How many writes (lines after the header) it holds.
    writes: usize,
    /// The length up to the end of the last good line.
    good_len: u64,
    /// The number of a torn last line that was dropped.
    torn_line: Option<usize>,
}

impl DataFile {
    /// `None` when the file does not exist. A damaged line is an error, except the journal's
    /// last line (`is_journal`), which a crash may have torn in the middle of an append.
    fn read(
        path: &Path,
        is_journal: bool,
        mut write: impl FnMut(&str, Location) -> Result<(), String>,
    ) -> io::Result<Option<DataFile>> {
        let bytes = match fs::read(path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(io::Error::new(error.kind(), format!("cannot read {}: {error}", path.display()))),
        };
        let advice = if is_journal {
            "The writes from this line on cannot be replayed. Restore the data directory from a backup; or, \
             to keep the writes before it and lose the later ones, cut the file before this line"
        } else {
            "The snapshot is written whole and renamed into place, so the damage happened afterwards and \
             items were lost. Restore the data directory from a backup, or move it away to start empty"
        };
        let damaged = |number: usize, why: &str| invalid(format!("{} line {number}: {why}. {advice}", path.display()));
        let mut header = None;
        let mut writes = 0;
        let mut good_len = 0;
        let mut torn_line = None;
        let mut start = 0;
        let mut number = 0;
        while start < bytes.len() {
            number += 1;
            let end = bytes[start..].iter().position(|byte| *byte == b'\n').map(|at| start + at);
            let line = &bytes[start..end.unwrap_or(bytes.len())];
            let is_last = end.is_none_or(|end| end + 1 == bytes.len());
            let checked = match end {
                Some(_) => decode(line),
                None => Err("it ends without a newline (the file was cut short)"),
            };
            let json = match checked {
                Ok(json) => json,
                // A torn last line: an append that never finished, so never acknowledged.
                Err(_) if is_journal && is_last && number > 1 => {
                    torn_line = Some(number);
                    break;
                }
                Err(why) => return Err(damaged(number, why)),
            };
            if number == 1 {
                header = Some(
                    serde_json::from_str::<Header>(json)
                        .map_err(|error| damaged(number, &format!("it is not a header: {error}")))?,
                );
            } else {
                let location = Location::of_line(is_journal, start as u64, line);
                write(json, location).map_err(|error| damaged(number, &format!("it is not a list of records: {error}")))?;
                writes += 1;
            }
            start = end.expect("a complete line") + 1;
            good_len = start as u64;
        }
        let header = header.ok_or_else(|| damaged(1, "the file is empty; it has no header"))?;
        Ok(Some(DataFile { header, writes, good_len, torn_line }))
    }
}

/// Where a line is in a data file: what [`LiveItems`] keeps of an item instead of the item.
#[derive(Clone, Copy, Debug)]
struct Location {
    in_journal: bool,
    /// Where the line starts (its checksum).
    offset: u64,
    /// Its length, without the newline.
    len: u32,
}

impl Location {
    fn of_line(in_journal: bool, offset: u64, line: impl AsRef<[u8]>) -> Location {
        let line = line.as_ref();
        let len = line.strip_suffix(b"\n").unwrap_or(line).len();
        Location { in_journal, offset, len: u32::try_from(len).expect("a line is less than 4 GB") }
    }

    /// The line's JSON in `file`, the whole data file it is in, checked again.
    fn json(self, file: &[u8]) -> io::Result<&str> {
        let end = self.offset as usize + self.len as usize;
        let line =
            file.get(self.offset as usize..end).ok_or_else(|| invalid(format!("a data file is shorter than {end} bytes")))?;
        decode(line).map_err(|why| invalid(format!("the line at byte {} of a data file: {why}", self.offset)))
    }
}

/// Where the newest state of each live item is on disk, not the item itself: the store holds
/// the items, and this index would otherwise hold them a second time. Read back from the files
/// only to undo a refused write, to compact, and once at start-up to load the store.
#[derive(Default)]
struct LiveItems {
    /// `container NUL partition key NUL id` → (the write's number, its line).
    items: HashMap<Box<str>, (u64, Location)>,
}

fn item_key(container: &str, partition_key: &str, id: &str) -> Box<str> {
    format!("{container}\0{partition_key}\0{id}").into_boxed_str()
}

/// A record without its item: enough to file it.
#[derive(Deserialize)]
struct Head {
    c: String,
    pk: String,
    id: String,
    doc: Option<serde::de::IgnoredAny>,
    seq: u64,
}

impl LiveItems {
    /// Files one record of the line at `location`.
    fn apply(&mut self, record: &Record, location: Location) {
        let key = item_key(&record.c, &record.pk, &record.id);
        match &record.doc {
            Some(_) => drop(self.items.insert(key, (record.seq, location))),
            None => drop(self.items.remove(&key)),
        }
    }

    /// Files the records of one line of a data file (the JSON of a list of records) for the
    /// writes numbered after `after`; returns the highest number it holds.
    fn apply_line(&mut self, line: &str, after: u64, location: Location) -> Result<u64, String> {
        let heads: Vec<Head> = serde_json::from_str(line).map_err(|error| error.to_string())?;
        for head in heads.iter().filter(|head| head.seq > after) {
            let key = item_key(&head.c, &head.pk, &head.id);
            match head.doc {
                Some(_) => drop(self.items.insert(key, (head.seq, location))),
                None => drop(self.items.remove(&key)),
            }
        }
        Ok(heads.iter().map(|head| head.seq).max().unwrap_or(0))
    }

    /// The item as the files in `dir` hold it.
    fn get(&self, dir: &Path, container: &str, partition_key: &str, id: &str) -> io::Result<Option<Value>> {
        let key = item_key(container, partition_key, id);
        let Some((_, location)) = self.items.get(&key) else { return Ok(None) };
        let mut file = File::open(dir.join(if location.in_journal { JOURNAL } else { SNAPSHOT }))?;
        let mut line = vec![0; location.offset as usize + location.len as usize];
        file.seek(io::SeekFrom::Start(location.offset))?;
        file.read_exact(&mut line[location.offset as usize..])?;
        let records: Vec<Record> = serde_json::from_str(location.json(&line)?).map_err(|error| invalid(error.to_string()))?;
        Ok(records.into_iter().find(|record| item_key(&record.c, &record.pk, &record.id) == key).and_then(|record| record.doc))
    }

    /// Every live item (its key, and the JSON of a line of its record alone) as the files in
    /// `dir` hold them, oldest write first.
    fn lines(&self, dir: &Path) -> io::Result<Vec<(Box<str>, String)>> {
        let snapshot = fs::read(dir.join(SNAPSHOT))?;
        let journal = fs::read(dir.join(JOURNAL))?;
        let mut items: Vec<(&Box<str>, &(u64, Location))> = self.items.iter().collect();
        items.sort_unstable_by_key(|(_, (seq, _))| *seq);
        items
            .into_iter()
            .map(|(key, (_, location))| {
                let json = location.json(if location.in_journal { &journal } else { &snapshot })?;
                Ok((key.clone(), record_alone(json, key)?))
            })
            .collect()
    }

    /// Every item is now in a snapshot with `header` and `lines` in this order.
    fn relocate(&mut self, header: Header, lines: &[(Box<str>, String)]) {
        let mut offset = encode_header(header).len() as u64;
        for (key, json) in lines {
            let line = encode(json);
            if let Some((_, location)) = self.items.get_mut(key) {
                *location = Location::of_line(false, offset, &line);
            }
            offset += line.len() as u64;
        }
    }
}

/// The JSON of a line of `key`'s record alone, from the JSON of a line of records: as it is when
/// it holds that record only, as every snapshot line does.
fn record_alone(json: &str, key: &str) -> io::Result<String> {
    let heads: Vec<Head> = serde_json::from_str(json).map_err(|error| invalid(error.to_string()))?;
    if heads.len() == 1 {
        return Ok(json.to_owned());
    }
    let records: Vec<Record> = serde_json::from_str(json).map_err(|error| invalid(error.to_string()))?;
    let record = records
        .into_iter()
        .find(|record| item_key(&record.c, &record.pk, &record.id).as_ref() == key)
        .ok_or_else(|| invalid(format!("a line of a data file does not hold the item {key:?} it is filed for")))?;
    Ok(serde_json::to_string(&[record]).expect("records serialize"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// The records of the lines `open` returns for loading.
    fn records(lines: &[Box<str>]) -> Vec<Record> {
        lines.iter().flat_map(|line| serde_json::from_str::<Vec<Record>>(line).unwrap()).collect()
    }
    use std::sync::Condvar;
    use std::sync::atomic::AtomicBool;

    /// A disk that can be full, can tear a write in half before refusing it, and can hold
    /// syncs until released (a slow `fdatasync`).
    #[derive(Default)]
    pub(crate) struct FaultyDisk {
        pub full: AtomicBool,
        pub tear: AtomicBool,
        held: Mutex<bool>,
        released: Condvar,
    }

    impl FaultyDisk {
        pub fn hold_syncs(&self) {
            *self.held.lock().unwrap() = true;
        }
        pub fn release_syncs(&self) {
            *self.held.lock().unwrap() = false;
            self.released.notify_all();
        }
    }

    /// Releases held syncs when a test ends, also by a failed assertion: the journal's drop
    /// waits for its writer.
    pub(crate) struct ReleaseOnDrop(pub Arc<FaultyDisk>);

    impl Drop for ReleaseOnDrop {
        fn drop(&mut self) {
            self.0.release_syncs();
        }
    }

    impl Disk for FaultyDisk {
        fn write(&self, _path: &Path, file: &mut File, bytes: &[u8]) -> io::Result<()> {
            if self.full.load(Ordering::SeqCst) {
                if self.tear.load(Ordering::SeqCst) {
                    file.write_all(&bytes[..bytes.len() / 2])?;
                }
                return Err(io::Error::new(io::ErrorKind::StorageFull, "No space left on device (injected)"));
            }
            file.write_all(bytes)
        }
        fn sync(&self, _path: &Path, file: &File) -> io::Result<()> {
            let mut held = self.held.lock().unwrap();
            while *held {
                held = self.released.wait(held).unwrap();
            }
            file.sync_data()
        }
    }

    fn put(id: &str, n: i64) -> Record {
        Record { c: "posts".into(), pk: id.into(), id: id.into(), doc: Some(json!({"id": id, "n": n})), seq: 0, exp: None }
    }

    fn delete(id: &str) -> Record {
        Record { c: "posts".into(), pk: id.into(), id: id.into(), doc: None, seq: 0, exp: None }
    }

    fn damage(path: &Path, line: usize, edit: impl Fn(&str) -> String) {
        let text = fs::read_to_string(path).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        lines[line - 1] = edit(&lines[line - 1]);
        fs::write(path, lines.join("\n") + "\n").unwrap();
    }

    #[tokio::test]
    async fn replay_yields_the_last_state_of_each_item_in_last_write_order() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, items) = Journal::open(dir.path()).unwrap();
        assert!(items.is_empty());
        journal.append(vec![put("a", 1), put("b", 1)]).1.await.unwrap();
        journal.append(vec![put("a", 2)]).1.await.unwrap();
        journal.append(vec![put("c", 1), delete("b")]).1.await.unwrap();
        assert_eq!((journal.last_seq(), journal.settled()), (3, 3));
        drop(journal);

        let (journal, items) = Journal::open(dir.path()).unwrap();
        assert_eq!(records(&items), vec![Record { seq: 2, ..put("a", 2) }, Record { seq: 3, ..put("c", 1) }]);
        assert_eq!(journal.last_seq(), 3, "numbering goes on after a restart");
        drop(journal);
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
        file.write_all(br#"0badcafe [{"c":"posts","pk":"b","id":"b","doc":{"id"#).unwrap();
        drop(file);
        let (journal, items) = Journal::open(dir.path()).unwrap();
        assert_eq!(records(&items), vec![Record { seq: 1, ..put("a", 1) }]);
        // Cut off, so the next line is a line of its own.
        journal.append(vec![put("b", 2)]).1.await.unwrap();
        drop(journal);
        let (_journal, items) = Journal::open(dir.path()).unwrap();
        assert_eq!(items.len(), 2);
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
    async fn damage_before_the_last_journal_line_and_anywhere_in_the_snapshot_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        // Compacting after every write, so the snapshot holds items too.
        let (journal, _) = Journal::open_with(dir.path(), Arc::new(RealDisk), 0).unwrap();
        journal.append(vec![put("a", 1)]).1.await.unwrap();
        journal.append(vec![put("b", 1)]).1.await.unwrap();
        drop(journal);
        let (journal, _) = Journal::open_with(dir.path(), Arc::new(RealDisk), u64::MAX).unwrap();
        journal.append(vec![put("c", 1)]).1.await.unwrap();
        journal.append(vec![put("d", 1)]).1.await.unwrap();
        drop(journal);
        let kept = fs::read(dir.path().join(SNAPSHOT)).unwrap();
        damage(&dir.path().join(SNAPSHOT), 3, |line| line.replace(r#""n":1"#, r#""n":7"#));
        let error = Journal::open(dir.path()).err().expect("damage is reported").to_string();
        assert!(error.contains("snapshot.jsonl line 3") && error.contains("checksum"), "{error}");
        assert!(error.contains("backup"), "says what to do: {error}");
        // The last line of the snapshot is no torn append: it is damage too.
        fs::write(dir.path().join(SNAPSHOT), &kept[..kept.len() - 5]).unwrap();
        let error = Journal::open(dir.path()).err().expect("a cut snapshot is reported").to_string();
        assert!(error.contains("snapshot.jsonl line 3"), "{error}");
        fs::write(dir.path().join(SNAPSHOT), &kept).unwrap();

        damage(&dir.path().join(JOURNAL), 2, |line| line.replace(r#""seq":3"#, r#""seq":9"#));
        let error = Journal::open(dir.path()).err().expect("damage is reported").to_string();
        assert!(error.contains("journal.jsonl line 2") && error.contains("checksum"), "{error}");
    }

    #[tokio::test]
    async fn a_journal_from_another_copy_is_detected() {
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        // `one` stays at generation 1; `two` is compacted at start and after each write.
        for (dir, compact_after) in [(&one, u64::MAX), (&two, 0)] {
            let (journal, _) = Journal::open_with(dir.path(), Arc::new(RealDisk), compact_after).unwrap();
            journal.append(vec![put("a", 1)]).1.await.unwrap();
        }
        fs::copy(one.path().join(JOURNAL), two.path().join(JOURNAL)).unwrap();
        let error = Journal::open(two.path()).err().expect("a mismatched pair is reported").to_string();
        assert!(error.contains("generation") && error.contains("not from the same copy"), "{error}");
    }

    #[tokio::test]
    async fn start_up_appends_to_the_journal_and_needs_no_free_space() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, _) = Journal::open_with(dir.path(), Arc::new(RealDisk), u64::MAX).unwrap();
        for n in 0..50 {
            journal.append(vec![put(&format!("p{n}"), n)]).1.await.unwrap();
        }
        drop(journal);
        let before = (fs::read(dir.path().join(SNAPSHOT)).unwrap(), fs::read(dir.path().join(JOURNAL)).unwrap());
        // A full disk: the compaction a start-up would try fails, and leaves nothing behind.
        let disk = Arc::new(FaultyDisk::default());
        disk.full.store(true, Ordering::SeqCst);
        let (journal, items) = Journal::open_with(dir.path(), disk.clone(), 0).unwrap();
        assert_eq!(items.len(), 50);
        std::thread::sleep(std::time::Duration::from_millis(100));
        let names: Vec<String> =
            fs::read_dir(dir.path()).unwrap().map(|entry| entry.unwrap().file_name().into_string().unwrap()).collect();
        assert!(!names.iter().any(|name| name.ends_with(".tmp")), "{names:?}");
        let after = (fs::read(dir.path().join(SNAPSHOT)).unwrap(), fs::read(dir.path().join(JOURNAL)).unwrap());
        assert!(before == after, "a failed compaction changes nothing");
        // Once there is room, the next write's compaction succeeds.
        disk.full.store(false, Ordering::SeqCst);
        journal.append(vec![put("q", 1)]).1.await.unwrap();
        drop(journal);
        let snapshot = fs::read_to_string(dir.path().join(SNAPSHOT)).unwrap();
        assert_eq!(snapshot.lines().count(), 52, "header and 51 items");
        assert_eq!(fs::read_to_string(dir.path().join(JOURNAL)).unwrap().lines().count(), 1, "the header alone");
        let (_journal, items) = Journal::open(dir.path()).unwrap();
        assert_eq!(items.len(), 51);
    }

    #[tokio::test]
    async fn the_journal_is_compacted_while_running() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, _) = Journal::open_with(dir.path(), Arc::new(RealDisk), 4096).unwrap();
        for n in 0..400 {
            journal.append(vec![put("a", n)]).1.await.unwrap();
        }
        let length = fs::metadata(dir.path().join(JOURNAL)).unwrap().len();
        assert!(length < 8192, "journal of {length} bytes for one item");
        drop(journal);
        let (journal, items) = Journal::open(dir.path()).unwrap();
        assert_eq!(records(&items), vec![Record { seq: 400, ..put("a", 399) }]);
        assert_eq!(journal.last_seq(), 400);
    }

    #[tokio::test]
    async fn durable_items_are_read_back_from_the_files_across_compactions() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, _) = Journal::open_with(dir.path(), Arc::new(RealDisk), 4096).unwrap();
        // Batches: lines of several records, the item read back is the one asked for.
        for n in 0..60 {
            journal.append(vec![put("a", n), put(&format!("b{n}"), n), put("c", n)]).1.await.unwrap();
            assert_eq!(journal.durable_item("posts", "a", "a").unwrap(), Some(json!({"id": "a", "n": n})));
            assert_eq!(journal.durable_item("posts", "c", "c").unwrap(), Some(json!({"id": "c", "n": n})));
        }
        journal.append(vec![delete("b0")]).1.await.unwrap();
        let snapshot = fs::read_to_string(dir.path().join(SNAPSHOT)).unwrap();
        assert!(snapshot.lines().count() > 2, "compacted at least once");
        assert_eq!(journal.durable_item("posts", "b7", "b7").unwrap(), Some(json!({"id": "b7", "n": 7})));
        assert_eq!(journal.durable_item("posts", "b0", "b0").unwrap(), None);
        drop(journal);
        let (_journal, items) = Journal::open(dir.path()).unwrap();
        let loaded = records(&items);
        assert_eq!(loaded.len(), 61, "a, c and b1..b59");
        assert!(loaded.contains(&Record { seq: 60, ..put("c", 59) }));
        assert!(items.iter().all(|line| LiveItem::parse(line).is_ok()), "a line of one record each");
    }

    #[tokio::test]
    async fn a_refused_append_leaves_no_partial_line_and_the_writer_recovers() {
        let dir = tempfile::tempdir().unwrap();
        let disk = Arc::new(FaultyDisk::default());
        let (journal, _) = Journal::open_with(dir.path(), disk.clone(), u64::MAX).unwrap();
        journal.append(vec![put("a", 1)]).1.await.unwrap();
        disk.full.store(true, Ordering::SeqCst);
        disk.tear.store(true, Ordering::SeqCst);
        let error = journal.append(vec![put("b", 1)]).1.await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::StorageFull);
        disk.full.store(false, Ordering::SeqCst);
        // Refused until the refused writes are undone (the store's part), then written again.
        assert!(journal.append(vec![put("c", 1)]).1.await.is_err());
        journal.resume();
        journal.append(vec![put("d", 1)]).1.await.unwrap();
        assert_eq!(journal.durable_item("posts", "b", "b").unwrap(), None);
        assert_eq!(journal.durable_item("posts", "d", "d").unwrap(), Some(json!({"id": "d", "n": 1})));
        drop(journal);
        let (_journal, items) = Journal::open(dir.path()).unwrap();
        let ids: Vec<String> = records(&items).iter().map(|record| record.id.clone()).collect();
        assert_eq!(ids, ["a", "d"]);
    }

    #[tokio::test]
    async fn a_compaction_interrupted_between_its_renames_loses_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, _) = Journal::open_with(dir.path(), Arc::new(RealDisk), u64::MAX).unwrap();
        journal.append(vec![put("a", 1)]).1.await.unwrap();
        drop(journal);
        let (journal, _) = Journal::open_with(dir.path(), Arc::new(RealDisk), 0).unwrap();
        journal.append(vec![put("b", 1)]).1.await.unwrap();
        drop(journal);
        let snapshot = DataFile::read(&dir.path().join(SNAPSHOT), false, |_, _| Ok(())).unwrap().unwrap().header;
        assert_eq!(snapshot.through, 2);
        // The new snapshot in place, the journal still the one before it (which holds `b`,
        // already in the snapshot), with a write appended to it after the snapshot was taken.
        let mut stale = encode(&serde_json::to_string(&Header { generation: snapshot.generation - 1, through: 1 }).unwrap());
        for record in [Record { seq: 2, ..put("b", 1) }, Record { seq: 9, ..put("c", 1) }] {
            stale.push_str(&encode(&serde_json::to_string(&[record]).unwrap()));
        }
        fs::write(dir.path().join(JOURNAL), stale).unwrap();
        let (journal, items) = Journal::open(dir.path()).unwrap();
        let ids: Vec<String> = records(&items).iter().map(|record| record.id.clone()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(journal.last_seq(), 9);
    }
}
