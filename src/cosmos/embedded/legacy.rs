//! The one-time import of a data directory written by the earlier embedded store: its
//! `snapshot.jsonl` (the live items at the last compaction) and `journal.jsonl` (the writes
//! since), into the database. What is left of that store is what the import needs: reading both
//! files, with their checks.
//!
//! Every line is `<crc32> <json>`, the checksum of the JSON in 8 hex digits; the first line of
//! each is a header with the compaction's generation and the last write the snapshot holds. A
//! damaged line is refused with its file and line, except a journal's torn last line (an append
//! `kill -9` cut short, never acknowledged), which is dropped. After the import the two files
//! are renamed `*.imported`, so nothing is lost and the import is not done twice.
//!
//! What is durable decides what a start does, wherever a crash fell: the database records that
//! the import is done in the transaction that writes the imported items, and only then are the
//! files renamed, one after the other. So a start that finds the record renames whatever is left
//! of the files (both, or one) without reading them, and one that does not imports them whole.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::database::Row;
use crate::cosmos::{Container, OpenError, StoreError};

pub(crate) const SNAPSHOT: &str = "snapshot.jsonl";
pub(crate) const JOURNAL: &str = "journal.jsonl";
/// What an imported file is renamed to: `<name>.imported`.
pub(crate) const IMPORTED_SUFFIX: &str = ".imported";

/// The first line of the snapshot and of the journal.
#[derive(Clone, Copy, Debug, Deserialize)]
struct Header {
    generation: u64,
    /// Every write numbered up to it is in the snapshot.
    through: u64,
}

/// One record of a line: the state one write left for one item.
#[derive(Deserialize)]
struct Record<'a> {
    #[serde(borrow)]
    c: std::borrow::Cow<'a, str>,
    pk: String,
    id: String,
    #[serde(borrow)]
    doc: Option<&'a RawValue>,
    seq: u64,
    #[serde(default)]
    exp: Option<u64>,
}

/// The live items of an old data directory, and the number of its last write.
pub(crate) struct Imported {
    pub rows: Vec<Row>,
    pub last_seq: u64,
}

/// Whether `dir` holds files of the earlier store.
pub(crate) fn present(dir: &Path) -> bool {
    dir.join(SNAPSHOT).exists() || dir.join(JOURNAL).exists()
}

/// Why the earlier store's files cannot be imported, with the files and what to do: the cause
/// of [`OpenError::Import`].
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A file could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A line is damaged: its checksum, its end or its encoding.
    #[error("{} line {line}: {why}. {}", path.display(), advice(*journal))]
    Damaged {
        /// The file.
        path: PathBuf,
        /// The line's number, from 1.
        line: usize,
        /// Whether the file is the journal (else the snapshot).
        journal: bool,
        /// What is wrong with the line.
        why: &'static str,
    },
    /// A line whose checksum matches holds other than a header (the first line) or a list of
    /// records (the others).
    #[error("{} line {line}: it is not {}. {}", path.display(), if *line == 1 { "a header" } else { "a list of records" }, advice(*journal))]
    NotRecords {
        /// The file.
        path: PathBuf,
        /// The line's number, from 1.
        line: usize,
        /// Whether the file is the journal (else the snapshot).
        journal: bool,
        /// Why it does not parse.
        #[source]
        source: serde_json::Error,
    },
    /// A record names a container the store does not have.
    #[error("{} line {line}: it names an unknown container {container:?}. {}", path.display(), advice(*journal))]
    UnknownContainer {
        /// The file.
        path: PathBuf,
        /// The line's number, from 1.
        line: usize,
        /// Whether the file is the journal (else the snapshot).
        journal: bool,
        /// The name it holds.
        container: String,
    },
    /// The journal is newer than the snapshot: they are from two copies of the data directory.
    #[error(
        "{} is generation {snapshot_generation} but {} is generation {journal_generation}: the journal is newer \
         than the snapshot, so they are not from the same copy of the data directory. Put back the pair that belongs \
         together (from a backup of the whole directory), or move the data directory away to start empty",
        snapshot.display(),
        journal.display()
    )]
    Generations {
        /// The snapshot.
        snapshot: PathBuf,
        /// Its generation.
        snapshot_generation: u64,
        /// The journal.
        journal: PathBuf,
        /// Its generation.
        journal_generation: u64,
    },
    /// The snapshot without its journal.
    #[error(
        "{} is missing next to {} (generation {generation}): the writes since the last compaction are in it. Put it \
         back (from wherever it went, or a backup of the data directory), or move the data directory away to start \
         empty",
        journal.display(),
        snapshot.display()
    )]
    NoJournal {
        /// The journal that is missing.
        journal: PathBuf,
        /// The snapshot there.
        snapshot: PathBuf,
        /// The snapshot's generation.
        generation: u64,
    },
    /// A journal past its first generation without its snapshot.
    #[error(
        "{} is missing next to {} (generation {generation}): the items written before the last compaction are in \
         it. Put it back (from wherever it went, or a backup of the data directory), or move the data directory away \
         to start empty",
        snapshot.display(),
        journal.display()
    )]
    NoSnapshot {
        /// The snapshot that is missing.
        snapshot: PathBuf,
        /// The journal there.
        journal: PathBuf,
        /// The journal's generation.
        generation: u64,
    },
}

/// What to do about a damaged line of the journal or of the snapshot.
fn advice(journal: bool) -> &'static str {
    if journal {
        "The writes from this line on cannot be imported. Restore the data directory from a backup; or, to keep the \
         writes before it and lose the later ones, cut the file before this line"
    } else {
        "The snapshot is written whole and renamed into place, so the damage happened afterwards and items were \
         lost. Restore the data directory from a backup, or move it away to start empty"
    }
}

/// Why a line's records were not applied; the file reading it adds where.
enum RecordFault {
    Json(serde_json::Error),
    UnknownContainer(String),
}

/// Reads the old files of `dir`, refusing damage as the earlier store did.
pub(crate) fn read(dir: &Path) -> Result<Imported, ImportError> {
    let (snapshot_path, journal_path) = (dir.join(SNAPSHOT), dir.join(JOURNAL));
    let mut live: HashMap<(Container, String, String), Row> = HashMap::new();
    let mut last_seq = 0;
    let mut apply = |json: &str, after: u64| -> Result<(), RecordFault> {
        let records: Vec<Record> = serde_json::from_str(json).map_err(RecordFault::Json)?;
        for record in records {
            last_seq = last_seq.max(record.seq);
            if record.seq <= after {
                continue;
            }
            let container = Container::ALL
                .into_iter()
                .find(|container| container.name() == record.c)
                .ok_or_else(|| RecordFault::UnknownContainer(record.c.clone().into_owned()))?;
            let key = (container, record.pk, record.id);
            match record.doc {
                Some(doc) => {
                    let row = Row {
                        container,
                        partition_key: key.1.clone(),
                        id: key.2.clone(),
                        doc: doc.get().to_owned(),
                        seq: record.seq,
                        expires: record.exp,
                    };
                    live.insert(key, row);
                }
                None => drop(live.remove(&key)),
            }
        }
        Ok(())
    };
    let snapshot = DataFile::read(&snapshot_path, false, |json| apply(json, 0))?;
    let through = snapshot.as_ref().map_or(0, |snapshot| snapshot.header.through);
    let journal = DataFile::read(&journal_path, true, |json| apply(json, through))?;
    match (&snapshot, &journal) {
        (Some(snapshot), Some(journal))
            if journal.header.generation > snapshot.header.generation =>
        {
            return Err(ImportError::Generations {
                snapshot: snapshot_path,
                snapshot_generation: snapshot.header.generation,
                journal: journal_path,
                journal_generation: journal.header.generation,
            });
        }
        // An older journal is what compactions interrupted between their two renames leave: its
        // writes up to the snapshot's `through` are in the snapshot, and were skipped above.
        (Some(_), Some(_)) => {}
        (Some(snapshot), None) => {
            let generation = snapshot.header.generation;
            return Err(ImportError::NoJournal {
                journal: journal_path,
                snapshot: snapshot_path,
                generation,
            });
        }
        // A first start that stopped between writing the two: nothing was written yet.
        (None, Some(journal)) if journal.header.generation == 1 && journal.writes == 0 => {}
        (None, Some(journal)) => {
            let generation = journal.header.generation;
            return Err(ImportError::NoSnapshot {
                snapshot: snapshot_path,
                journal: journal_path,
                generation,
            });
        }
        (None, None) => {}
    }
    if let Some(line) = journal.as_ref().and_then(|journal| journal.torn_line) {
        tracing::warn!(path = %journal_path.display(), line, "dropping a torn last line (a write that was never acknowledged)");
    }
    let headers = [&snapshot, &journal].into_iter().flatten().map(|file| file.header.through);
    let last_seq = headers.fold(last_seq, u64::max);
    let mut rows: Vec<Row> = live.into_values().collect();
    rows.sort_unstable_by_key(|row| row.seq);
    Ok(Imported { rows, last_seq })
}

/// Renames whichever of the files of `dir` are there to `<name>.imported`, the snapshot first,
/// then syncs the directory; called once the import is committed. Any of the renames may be lost
/// to a crash (or, before the sync, to a power cut); the next start does them again. A kept
/// `*.imported` is never replaced: that is refused before anything is renamed.
pub(crate) fn set_aside(dir: &Path) -> Result<(), OpenError> {
    let renames: Vec<(PathBuf, PathBuf)> = [SNAPSHOT, JOURNAL]
        .into_iter()
        .map(|name| (dir.join(name), dir.join(format!("{name}{IMPORTED_SUFFIX}"))))
        .filter(|(file, _)| file.exists())
        .collect();
    if let Some((file, kept)) = renames.iter().find(|(_, kept)| kept.exists()) {
        return Err(OpenError::ImportedNameTaken { file: file.clone(), kept: kept.clone() });
    }
    let failed = |error| {
        StoreError::io(format!("cannot rename the imported files in {}", dir.display()), error)
    };
    for (file, kept) in &renames {
        fs::rename(file, kept).map_err(failed)?;
    }
    Ok(fs::File::open(dir).and_then(|dir| dir.sync_all()).map_err(failed)?)
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

/// A snapshot or journal, read and checked; its lines went to the reader's callback.
struct DataFile {
    header: Header,
    /// How many writes (lines after the header) it holds.
    writes: usize,
    /// The number of a torn last line that was dropped.
    torn_line: Option<usize>,
}

impl DataFile {
    /// `None` when the file does not exist. A damaged line is an error, except the journal's
    /// last line (`journal`), which a crash may have torn in the middle of an append.
    fn read(
        path: &Path,
        journal: bool,
        mut write: impl FnMut(&str) -> Result<(), RecordFault>,
    ) -> Result<Option<DataFile>, ImportError> {
        let bytes = match fs::read(path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(ImportError::Read { path: path.to_owned(), source }),
        };
        let damaged = |line: usize, why: &'static str| ImportError::Damaged {
            path: path.to_owned(),
            line,
            journal,
            why,
        };
        let mut header = None;
        let mut writes = 0;
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
                Err(_) if journal && is_last && number > 1 => {
                    torn_line = Some(number);
                    break;
                }
                Err(why) => return Err(damaged(number, why)),
            };
            if number == 1 {
                let not_a_header = |source| ImportError::NotRecords {
                    path: path.to_owned(),
                    line: 1,
                    journal,
                    source,
                };
                header = Some(serde_json::from_str::<Header>(json).map_err(not_a_header)?);
            } else {
                write(json).map_err(|fault| match fault {
                    RecordFault::Json(source) => ImportError::NotRecords {
                        path: path.to_owned(),
                        line: number,
                        journal,
                        source,
                    },
                    RecordFault::UnknownContainer(container) => ImportError::UnknownContainer {
                        path: path.to_owned(),
                        line: number,
                        journal,
                        container,
                    },
                })?;
                writes += 1;
            }
            start = end.expect("a complete line") + 1;
        }
        let header = header.ok_or_else(|| damaged(1, "the file is empty; it has no header"))?;
        Ok(Some(DataFile { header, writes, torn_line }))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A line of the earlier store's files.
    pub(crate) fn line(json: &serde_json::Value) -> String {
        let json = json.to_string();
        format!("{:08x} {json}\n", crc32fast::hash(json.as_bytes()))
    }

    fn put(id: &str, n: i64, seq: u64) -> serde_json::Value {
        json!([{"c": "posts", "pk": id, "id": id, "doc": {"id": id, "n": n}, "seq": seq}])
    }

    fn write(dir: &Path, name: &str, generation: u64, through: u64, lines: &[serde_json::Value]) {
        let mut text = line(&json!({"generation": generation, "through": through}));
        lines.iter().for_each(|records| text.push_str(&line(records)));
        fs::write(dir.join(name), text).unwrap();
    }

    fn ids(imported: &Imported) -> Vec<&str> {
        imported.rows.iter().map(|row| row.id.as_str()).collect()
    }

    #[test]
    fn the_last_state_of_each_item_is_imported_in_last_write_order() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), SNAPSHOT, 2, 2, &[put("a", 1, 1), put("b", 1, 2)]);
        let delete_b = json!([{"c": "posts", "pk": "b", "id": "b", "doc": null, "seq": 4}]);
        write(dir.path(), JOURNAL, 2, 2, &[put("a", 2, 3), delete_b, put("c", 1, 5)]);
        let imported = read(dir.path()).unwrap();
        assert_eq!(ids(&imported), ["a", "c"]);
        assert_eq!(imported.rows[0].doc, r#"{"id":"a","n":2}"#);
        assert_eq!(imported.last_seq, 5);
    }

    #[test]
    fn a_journal_left_behind_by_interrupted_compactions_is_read_after_the_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        // Two compactions stopped between their renames: the snapshot is two generations on.
        write(dir.path(), SNAPSHOT, 5, 2, &[put("a", 1, 1), put("b", 1, 2)]);
        write(dir.path(), JOURNAL, 3, 0, &[put("a", 1, 1), put("b", 1, 2), put("c", 1, 3)]);
        let imported = read(dir.path()).unwrap();
        assert_eq!(ids(&imported), ["a", "b", "c"]);
        // A journal newer than its snapshot is from another copy.
        write(dir.path(), JOURNAL, 6, 0, &[]);
        let error = read(dir.path()).err().unwrap();
        assert!(
            matches!(
                error,
                ImportError::Generations { snapshot_generation: 5, journal_generation: 6, .. }
            ),
            "{error:?}"
        );
        assert!(error.to_string().contains("not from the same copy"), "{error}");
    }

    /// Each refusal names its file and line, and says what it found there.
    #[test]
    fn a_damaged_line_is_refused_saying_what_is_wrong_where() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join(JOURNAL);
        write(dir.path(), SNAPSHOT, 1, 0, &[]);
        let refused = |lines: &[serde_json::Value], extra: &str| {
            write(dir.path(), JOURNAL, 1, 0, lines);
            let mut text = fs::read_to_string(&journal).unwrap();
            text.push_str(extra);
            fs::write(&journal, text).unwrap();
            read(dir.path()).err().unwrap()
        };
        // A changed line, not the last (a torn last line is dropped).
        let changed = line(&put("b", 1, 2)).replace("\"b\"", "\"c\"");
        let error = refused(&[put("a", 1, 1)], &(changed + &line(&put("d", 1, 3))));
        assert!(
            matches!(&error, ImportError::Damaged { path, line: 3, journal: true, .. } if *path == journal),
            "{error:?}"
        );
        let error = refused(&[json!({"not": "records"}), put("b", 1, 2)], "");
        assert!(
            matches!(&error, ImportError::NotRecords { line: 2, journal: true, .. }),
            "{error:?}"
        );
        let drafts = json!([{"c": "drafts", "pk": "a", "id": "a", "doc": {"id": "a"}, "seq": 1}]);
        let error = refused(&[drafts, put("b", 1, 2)], "");
        assert!(
            matches!(&error, ImportError::UnknownContainer { line: 2, container, .. } if container == "drafts"),
            "{error:?}"
        );
        fs::remove_file(&journal).unwrap();
        let error = read(dir.path()).err().unwrap();
        assert!(
            matches!(&error, ImportError::NoJournal { generation: 1, journal: missing, .. } if *missing == journal),
            "{error:?}"
        );
    }

    #[test]
    fn whatever_is_left_is_set_aside_but_a_kept_imported_file_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let kept = |name: &str| dir.path().join(format!("{name}{IMPORTED_SUFFIX}"));
        write(dir.path(), SNAPSHOT, 1, 0, &[]);
        write(dir.path(), JOURNAL, 1, 0, &[put("a", 1, 1)]);
        fs::write(kept(JOURNAL), "an earlier import's journal").unwrap();
        let error = set_aside(dir.path()).err().unwrap();
        assert!(
            matches!(&error, OpenError::ImportedNameTaken { file, kept: taken } if *file == dir.path().join(JOURNAL) && *taken == kept(JOURNAL)),
            "{error:?}"
        );
        let error = error.to_string();
        assert!(
            error.contains(&kept(JOURNAL).display().to_string()) && error.contains("start again"),
            "{error}"
        );
        assert!(dir.path().join(SNAPSHOT).exists(), "nothing is renamed");
        assert_eq!(fs::read_to_string(kept(JOURNAL)).unwrap(), "an earlier import's journal");
        // The journal alone, as a crash between the renames leaves it.
        fs::remove_file(kept(JOURNAL)).unwrap();
        fs::rename(dir.path().join(SNAPSHOT), kept(SNAPSHOT)).unwrap();
        set_aside(dir.path()).unwrap();
        assert!(!present(dir.path()) && kept(SNAPSHOT).exists() && kept(JOURNAL).exists());
    }
}
