//! The local change-feed processors' checkpoints: one small file per processor in the embedded
//! store's data directory, holding the position every write up to which it delivered. The one
//! home of their name, their reading and their writing: the processors keep them, and the
//! store checks them against its numbering when it opens (and carries them on when it imports
//! an earlier store). A file that cannot be read is an error that says what to do, wherever it
//! is read.
//!
//! In the `cosmos` layer, below the processors, because the store reads them too.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::MAX_POSITION;

/// How a checkpoint file is named: `changefeed-<function>.json`.
const PREFIX: &str = "changefeed-";
const SUFFIX: &str = ".json";

/// What the file holds: every write numbered up to `delivered_through` has been delivered.
#[derive(Serialize, Deserialize)]
struct Checkpoint {
    delivered_through: u64,
}

/// A checkpoint that cannot be used, with the file and what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The file does not hold a position.
    #[error(
        "{} is corrupt: it holds a change-feed processor's position. Delete it to have every change \
         delivered again from the beginning (the change-feed functions are idempotent), then start again",
        path.display()
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        damage: Damage,
    },
    /// A directory where the file belongs.
    #[error(
        "{} is a directory, where a change-feed processor keeps its position in a file: move it out of the data \
         directory (or delete it, if nothing in it is yours), then start again; every change is then delivered again \
         from the beginning (the change-feed functions are idempotent)",
        path.display()
    )]
    Directory {
        /// The directory.
        path: PathBuf,
    },
    /// A position beyond the last write the data directory numbered: no processor got there.
    #[error(
        "{} holds a change-feed processor's position {position}, beyond the last write the data directory numbered \
         ({last}): no processor got there, so the file is damaged or from another copy. Write \
         {{\"delivered_through\": {last}}} in it if every write was delivered, or delete it to have every change \
         delivered again from the beginning (the change-feed functions are idempotent), then start again",
        path.display()
    )]
    BeyondLastWrite {
        /// The file.
        path: PathBuf,
        /// The position it holds.
        position: u64,
        /// The last write numbered.
        last: u64,
    },
    /// The file (or the data directory, to list them) could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The write on a blocking thread did not finish (the thread panicked or the runtime ended).
    #[error("saving {} did not finish", path.display())]
    Unfinished {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: tokio::task::JoinError,
    },
}

/// What is wrong with a corrupt checkpoint.
#[derive(Debug, thiserror::Error)]
pub enum Damage {
    /// Not the JSON of a position.
    #[error("it is not the JSON of a position")]
    NotAPosition(#[source] serde_json::Error),
    /// A position no write number can reach.
    #[error("its position {0} is beyond any write number, {MAX_POSITION} at most")]
    BeyondAnyWrite(u64),
}

/// The checkpoint of the processor of `function` (its name) in `data_dir`.
pub(crate) fn path(data_dir: &Path, function: &str) -> PathBuf {
    data_dir.join(format!("{PREFIX}{function}{SUFFIX}"))
}

/// The position in the checkpoint at `path`, 0 where there is none yet; refused where it is
/// damaged, or beyond any write number.
pub(crate) fn read(path: &Path) -> Result<u64, CheckpointError> {
    match read_unbounded(path)? {
        position if position <= MAX_POSITION => Ok(position),
        position => Err(CheckpointError::Corrupt {
            path: path.to_owned(),
            damage: Damage::BeyondAnyWrite(position),
        }),
    }
}

/// The position in the file as it is, any `u64`: the store compares it with its own bound,
/// which names the file's fix better than [`read`] can.
fn read_unbounded(path: &Path) -> Result<u64, CheckpointError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice::<Checkpoint>(&bytes)
            .map(|checkpoint| checkpoint.delivered_through)
            .map_err(|error| CheckpointError::Corrupt {
                path: path.to_owned(),
                damage: Damage::NotAPosition(error),
            }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(_) if path.is_dir() => Err(CheckpointError::Directory { path: path.to_owned() }),
        Err(source) => Err(CheckpointError::Read { path: path.to_owned(), source }),
    }
}

/// Every checkpoint in `data_dir` (whichever processor left it) and the position it holds, as
/// it is; the first that cannot be read refuses them all. (The embedded store's alone.)
#[cfg(feature = "embedded")]
pub(crate) fn all(data_dir: &Path) -> Result<Vec<(PathBuf, u64)>, CheckpointError> {
    let listing = |source| CheckpointError::Read { path: data_dir.to_owned(), source };
    let mut positions = Vec::new();
    for entry in std::fs::read_dir(data_dir).map_err(listing)? {
        let entry = entry.map_err(listing)?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(PREFIX) && name.ends_with(SUFFIX) {
            let path = entry.path();
            let position = read_unbounded(&path)?;
            positions.push((path, position));
        }
    }
    Ok(positions)
}

/// [`write`] on tokio's blocking threads: its two fsyncs (the file, the directory) after every
/// batch would otherwise hold one of the few worker threads that serve HTTP.
pub(crate) async fn write_off_the_workers(
    path: &Path,
    delivered_through: u64,
) -> Result<u64, CheckpointError> {
    let owned = path.to_path_buf();
    tokio::task::spawn_blocking(move || write(&owned, delivered_through))
        .await
        .map_err(|source| CheckpointError::Unfinished { path: path.to_owned(), source })?
}

/// Writes the position atomically (a crash leaves the old one, which only means a few batches
/// are delivered again) and returns it.
pub(crate) fn write(path: &Path, delivered_through: u64) -> Result<u64, CheckpointError> {
    let temporary = path.with_extension("json.tmp");
    let bytes =
        serde_json::to_vec(&Checkpoint { delivered_through }).expect("a checkpoint serializes");
    // Synced before and after the rename: otherwise a power cut could leave the new name on an
    // empty file (a checkpoint that refuses start-up) or the old position after the new one was
    // acted on.
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&temporary)?;
        std::io::Write::write_all(&mut file, &bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)?;
        match path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            Some(dir) => std::fs::File::open(dir)?.sync_all(),
            None => std::fs::File::open(".")?.sync_all(),
        }
    };
    write().map_err(|source| CheckpointError::Write { path: path.to_owned(), source })?;
    Ok(delivered_through)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_written_is_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(dir.path(), "PostsChangeFeed");
        assert_eq!(read(&path).unwrap(), 0, "no file yet: from the beginning");
        write(&path, 42).unwrap();
        assert_eq!(read(&path).unwrap(), 42);
        assert_eq!(all(dir.path()).unwrap(), vec![(path, 42)]);
    }

    #[test]
    fn damage_is_refused_where_it_is_listed_too() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(dir.path(), "UsersChangeFeed");
        std::fs::write(&path, b"{\"delivered_thr").unwrap();
        assert!(matches!(
            read(&path),
            Err(CheckpointError::Corrupt { damage: Damage::NotAPosition(_), .. })
        ));
        assert!(matches!(all(dir.path()), Err(CheckpointError::Corrupt { .. })), "not skipped");
    }

    #[test]
    fn a_position_beyond_any_write_number_is_corrupt_but_listed_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(dir.path(), "PostsChangeFeed");
        write(&path, u64::MAX).unwrap();
        assert!(matches!(
            read(&path),
            Err(CheckpointError::Corrupt { damage: Damage::BeyondAnyWrite(u64::MAX), .. })
        ));
        assert_eq!(all(dir.path()).unwrap(), vec![(path, u64::MAX)]);
    }
}
