//! The pictures of the embedded store: files in the data directory's `pictures/`, one directory
//! per writer and one within it per post, durable as the rest of it.
//!
//! A picture is written to a temporary file, flushed to the disk, and only then renamed to its
//! name (and the directory flushed). So a name is there only with all of its bytes. A crash
//! (`kill -9`, a power cut) leaves at most a temporary file, which the next start removes, and
//! never a half picture under a name. Names are content addresses ([`PictureName`]), so a
//! picture stored twice is the same file, and one never changes under its name.
//!
//! A file read is told apart from its other versions by what changes whenever its bytes may
//! ([`Version::File`]). That is its device and inode (a file put in its place is another
//! inode), its length, and its times of last modification and of change in nanoseconds. The
//! change time (`st_ctime`) cannot be set from user space. Every write, truncation or `touch`
//! sets it to the kernel's clock (Linux's `file_update_time`, called by `write(2)` before it
//! copies a byte). So a file changed in place under its name has another version even when its
//! length and modification time are put back. The few changes it does not show: a program
//! writing into the file through a shared mapping sets it at its first write to each page only.
//! And a disk that hands back other bytes without an error changes nothing on the file at all.
//!
//! [`PictureName`]: super::PictureName

use std::io::Write;
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::store::{PictureStore, PictureStoreError, PostFolder, Stored, Usage, Version};
use crate::model::picture::{PictureAddress, PictureName};

/// Where temporary files start their names; no picture's name does.
const TEMPORARY: &str = ".partial-";

/// How old a file's change time must be, when it is read, for its version to be told for
/// certain. A file's times are only as fine as its filesystem keeps them (one second on ext4
/// with 128-byte inodes, two on FAT) and as the kernel's clock ticks (a few milliseconds,
/// without Linux 6.13's fine-grained timestamps). So a change within the same tick as the one
/// before it leaves the same times: what git calls "racy" (its
/// Documentation/technical/racy-git.txt). A file read this long after its last change is in a
/// later tick than that change, so any change after the read shows.
const SETTLED_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// The pictures of a data directory.
pub struct DirectoryStore {
    root: PathBuf,
}

impl DirectoryStore {
    /// Opens `data_dir/pictures`, creating it, and removes what writes cut short left.
    pub fn open(data_dir: &Path) -> Result<DirectoryStore, PictureStoreError> {
        let root = data_dir.join("pictures");
        std::fs::create_dir_all(&root).map_err(|error| PictureStoreError::io(&root, error))?;
        for owner in subdirectories(&root)? {
            for post in subdirectories(&owner)? {
                remove_partials(&post)?;
            }
        }
        Ok(DirectoryStore { root })
    }

    fn post_directory(&self, owner: &str, post: &str) -> PathBuf {
        self.root.join(owner).join(post)
    }

    fn path(&self, address: &PictureAddress) -> PathBuf {
        self.post_directory(&address.owner, &address.post).join(address.name.as_str())
    }
}

#[async_trait]
impl PictureStore for DirectoryStore {
    /// Answers no version: a file just written changed within [`SETTLED_AFTER`], so its version
    /// is told at its first read after that.
    async fn put(
        &self,
        address: &PictureAddress,
        bytes: &[u8],
    ) -> Result<Option<Version>, PictureStoreError> {
        let (root, path, bytes) = (self.root.clone(), self.path(address), bytes.to_vec());
        blocking(move || {
            if path.exists() {
                return Ok(None);
            }
            let directory =
                path.parent().expect("a picture's path has its post's directory").to_owned();
            let written = (|| {
                create_durably(&root, &directory)?;
                let temporary = directory.join(format!("{TEMPORARY}{}", uuid::Uuid::new_v4()));
                let mut file = std::fs::File::create_new(&temporary)?;
                let stored = (|| {
                    file.write_all(&bytes)?;
                    file.sync_all()?;
                    std::fs::rename(&temporary, &path)?;
                    sync_directory(&directory)
                })();
                if stored.is_err() {
                    let _ = std::fs::remove_file(&temporary);
                }
                stored
            })();
            written.map(|()| None).map_err(|error| PictureStoreError::io(&path, error))
        })
        .await
    }

    async fn read(&self, address: &PictureAddress) -> Result<Option<Stored>, PictureStoreError> {
        let path = self.path(address);
        blocking(move || match read_with_version(&path) {
            Ok(stored) => Ok(Some(stored)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(PictureStoreError::io(&path, error)),
        })
        .await
    }

    /// One `stat`, on the calling (async) thread: a picture served before has its directory
    /// entry and inode in memory. Not handing the request to a blocking thread is most of what
    /// serving a kept small picture saves (BENCHMARKS.md, "Pictures, checked once").
    fn version_now(&self, address: &PictureAddress) -> Option<Version> {
        let reading = std::time::SystemTime::now();
        let metadata = std::fs::metadata(self.path(address)).ok()?;
        settled(&metadata, reading).then(|| version_of(&metadata))
    }

    /// One `open` and one `fstat`, on the calling thread, as [`PictureStore::version_now`].
    fn open_at(&self, address: &PictureAddress, version: &Version) -> Option<std::fs::File> {
        let file = std::fs::File::open(self.path(address)).ok()?;
        (version_of(&file.metadata().ok()?) == *version).then_some(file)
    }

    async fn contains(&self, address: &PictureAddress) -> Result<bool, PictureStoreError> {
        let path = self.path(address);
        blocking(move || path.try_exists().map_err(|error| PictureStoreError::io(&path, error)))
            .await
    }

    async fn remove(&self, address: &PictureAddress) -> Result<(), PictureStoreError> {
        let path = self.path(address);
        blocking(move || {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(error) => return Err(PictureStoreError::io(&path, error)),
            }
            let directory = path.parent().expect("a picture's path has its post's directory");
            sync_directory(directory).map_err(|error| PictureStoreError::io(directory, error))
        })
        .await
    }

    async fn remove_post(&self, owner: &str, post: &str) -> Result<usize, PictureStoreError> {
        let directory = self.post_directory(owner, post);
        blocking(move || {
            let entries = match std::fs::read_dir(&directory) {
                Ok(entries) => entries,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(0),
                Err(error) => return Err(PictureStoreError::io(&directory, error)),
            };
            let mut removed = 0;
            for entry in entries {
                let path = entry.map_err(|error| PictureStoreError::io(&directory, error))?.path();
                std::fs::remove_file(&path).map_err(|error| PictureStoreError::io(&path, error))?;
                removed += 1;
            }
            std::fs::remove_dir(&directory)
                .map_err(|error| PictureStoreError::io(&directory, error))?;
            let owner = directory.parent().expect("a post's directory is in its owner's");
            sync_directory(owner).map_err(|error| PictureStoreError::io(owner, error))?;
            Ok(removed)
        })
        .await
    }

    async fn post_pictures(
        &self,
        owner: &str,
        post: &str,
    ) -> Result<Vec<PictureName>, PictureStoreError> {
        let directory = self.post_directory(owner, post);
        blocking(move || {
            let entries = match std::fs::read_dir(&directory) {
                Ok(entries) => entries,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                Err(error) => return Err(PictureStoreError::io(&directory, error)),
            };
            let mut names = Vec::new();
            for entry in entries {
                let entry = entry.map_err(|error| PictureStoreError::io(&directory, error))?;
                // A write cut short (its temporary file) is no picture.
                if let Some(name) = PictureName::parse(&entry.file_name().to_string_lossy()) {
                    names.push(name);
                }
            }
            Ok(names)
        })
        .await
    }

    async fn usage(&self, owner: &str) -> Result<Usage, PictureStoreError> {
        let directory = self.root.join(owner);
        blocking(move || {
            if !directory.exists() {
                return Ok(Usage::default());
            }
            let mut files = Vec::new();
            for post in subdirectories(&directory)? {
                for entry in
                    std::fs::read_dir(&post).map_err(|error| PictureStoreError::io(&post, error))?
                {
                    let entry = entry.map_err(|error| PictureStoreError::io(&post, error))?;
                    let size = entry
                        .metadata()
                        .map_err(|error| PictureStoreError::io(&entry.path(), error))?
                        .len();
                    files.push((entry.file_name().to_string_lossy().into_owned(), size));
                }
            }
            Ok(Usage::of(files.iter().map(|(name, size)| (name.as_str(), *size))))
        })
        .await
    }

    async fn folders(&self) -> Result<Vec<PostFolder>, PictureStoreError> {
        let root = self.root.clone();
        blocking(move || {
            let mut folders = Vec::new();
            for owner in subdirectories(&root)? {
                for post in subdirectories(&owner)? {
                    let name = |path: &Path| {
                        path.file_name()
                            .map(|name| name.to_string_lossy().into_owned())
                            .unwrap_or_default()
                    };
                    folders.push(PostFolder {
                        owner: name(&owner),
                        post: name(&post),
                        last_written: last_written(&post)?,
                    });
                }
            }
            Ok(folders)
        })
        .await
    }
}

/// The file at `path`, with its version where it can be told for certain. The version must be
/// the same before and after the read, and changed last at least [`SETTLED_AFTER`] before it.
/// The clock is read before the file is, so a change in the tick of the last one would have
/// come before the read: it is in the bytes and the first version.
fn read_with_version(path: &Path) -> std::io::Result<Stored> {
    use std::io::Read;
    let reading = std::time::SystemTime::now();
    let mut file = std::fs::File::open(path)?;
    let before = file.metadata()?;
    // Its length as stored, as `std::fs::read` takes it: the read grows it if the file did.
    let mut bytes = Vec::with_capacity(usize::try_from(before.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    let after = file.metadata()?;
    let version = version_of(&before);
    let version = (settled(&before, reading) && version == version_of(&after)).then_some(version);
    Ok(Stored { bytes, version, recorded_sha256: None })
}

/// The bytes of a file sent in pieces of at most [`Pieces::PIECE`], each read on a blocking
/// thread when the one before it was taken. A large picture is never whole in memory, and a
/// client that reads slowly holds no thread, only its open file and one piece. The file must be
/// its version to the end. The last piece is held back until the file's version, read again, is
/// the one it was opened at. Where it is not, or the file ends early, the pieces end in an
/// error. The answer, whose length was said, is then cut short, and is never a whole answer of
/// other bytes.
pub(crate) struct Pieces {
    file: Option<std::fs::File>,
    version: Version,
    length: u64,
    sent: u64,
}

impl Pieces {
    /// The most bytes read at once.
    const PIECE: u64 = 256 * 1024;

    /// The pieces of `file`, opened at `version` ([`PictureStore::open_at`]).
    pub(crate) fn new(file: std::fs::File, version: Version) -> Pieces {
        let length = version.file_length().unwrap_or(0);
        Pieces { file: Some(file), version, length, sent: 0 }
    }

    /// The file's length: the answer's `Content-Length`.
    pub(crate) fn length(&self) -> u64 {
        self.length
    }

    /// The next piece, `None` after the last; an error where the file changed or could not be
    /// read (no piece follows one).
    pub(crate) async fn next(&mut self) -> Option<std::io::Result<bytes::Bytes>> {
        use std::io::Read;
        let file = self.file.take()?;
        if self.sent == self.length {
            return None;
        }
        let wanted = Self::PIECE.min(self.length - self.sent);
        let last = self.sent + wanted == self.length;
        let version = last.then(|| self.version.clone());
        let read = tokio::task::spawn_blocking(move || {
            let mut piece = Vec::with_capacity(usize::try_from(wanted).unwrap_or(0));
            (&file).take(wanted).read_to_end(&mut piece)?;
            if piece.len() as u64 != wanted {
                return Err(changed("it ended early"));
            }
            if let Some(version) = version
                && version_of(&file.metadata()?) != version
            {
                return Err(changed("it changed while it was sent"));
            }
            Ok((file, piece))
        })
        .await;
        match read {
            Ok(Ok((file, piece))) => {
                self.sent += wanted;
                self.file = Some(file);
                Some(Ok(bytes::Bytes::from(piece)))
            }
            Ok(Err(error)) => Some(Err(error)),
            Err(joined) => Some(Err(std::io::Error::other(joined))),
        }
    }
}

fn changed(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("a picture sent in pieces: {what}"),
    )
}

/// Whether the file `metadata` describes changed last at least [`SETTLED_AFTER`] before
/// `reading`, a time taken before it was read.
fn settled(metadata: &std::fs::Metadata, reading: std::time::SystemTime) -> bool {
    let nanos = u64::try_from(changed_ns(metadata)).unwrap_or(0);
    std::time::UNIX_EPOCH + std::time::Duration::from_nanos(nanos) + SETTLED_AFTER <= reading
}

/// What changes whenever a file's bytes may (see the module's documentation).
fn version_of(metadata: &std::fs::Metadata) -> Version {
    use std::os::unix::fs::MetadataExt;
    Version::File {
        device: metadata.dev(),
        inode: metadata.ino(),
        length: metadata.size(),
        modified_ns: i128::from(metadata.mtime()) * 1_000_000_000
            + i128::from(metadata.mtime_nsec()),
        changed_ns: changed_ns(metadata),
    }
}

fn changed_ns(metadata: &std::fs::Metadata) -> i128 {
    use std::os::unix::fs::MetadataExt;
    i128::from(metadata.ctime()) * 1_000_000_000 + i128::from(metadata.ctime_nsec())
}

/// The last time anything in `directory` was written (its files', or its own where it has none).
fn last_written(directory: &Path) -> Result<std::time::SystemTime, PictureStoreError> {
    let own = std::fs::metadata(directory).and_then(|metadata| metadata.modified());
    let mut newest = own.map_err(|error| PictureStoreError::io(directory, error))?;
    for entry in
        std::fs::read_dir(directory).map_err(|error| PictureStoreError::io(directory, error))?
    {
        let entry = entry.map_err(|error| PictureStoreError::io(directory, error))?;
        let modified = entry.metadata().and_then(|metadata| metadata.modified());
        newest = newest.max(modified.map_err(|error| PictureStoreError::io(&entry.path(), error))?);
    }
    Ok(newest)
}

/// The directories in `directory`.
fn subdirectories(directory: &Path) -> Result<Vec<PathBuf>, PictureStoreError> {
    let mut found = Vec::new();
    for entry in
        std::fs::read_dir(directory).map_err(|error| PictureStoreError::io(directory, error))?
    {
        let entry = entry.map_err(|error| PictureStoreError::io(directory, error))?;
        if entry.file_type().map_err(|error| PictureStoreError::io(&entry.path(), error))?.is_dir()
        {
            found.push(entry.path());
        }
    }
    Ok(found)
}

/// Removes the temporary files of writes cut short in a post's directory.
fn remove_partials(directory: &Path) -> Result<(), PictureStoreError> {
    for entry in
        std::fs::read_dir(directory).map_err(|error| PictureStoreError::io(directory, error))?
    {
        let entry = entry.map_err(|error| PictureStoreError::io(directory, error))?;
        if entry.file_name().to_string_lossy().starts_with(TEMPORARY) {
            let path = entry.path();
            std::fs::remove_file(&path).map_err(|error| PictureStoreError::io(&path, error))?;
            tracing::info!(path = %path.display(), "removed a picture whose write was cut short");
        }
    }
    Ok(())
}

/// Creates `directory` (an owner's, then a post's, under `root`) where missing, each new entry
/// flushed into its parent, so that a picture renamed into it is not lost with its directory.
fn create_durably(root: &Path, directory: &Path) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut at = directory;
    while at != root && !at.exists() {
        missing.push(at);
        at = at.parent().expect("under the root");
    }
    for directory in missing.into_iter().rev() {
        match std::fs::create_dir(directory) {
            Ok(()) => {}
            // Made meanwhile by another upload to the same post.
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(error),
        }
        sync_directory(directory.parent().expect("under the root"))?;
    }
    Ok(())
}

/// Flushes a directory's entries (a rename or a removal) to the disk.
fn sync_directory(directory: &Path) -> std::io::Result<()> {
    std::fs::File::open(directory)?.sync_all()
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, PictureStoreError> + Send + 'static,
) -> Result<T, PictureStoreError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| PictureStoreError::Unavailable(error.to_string()))?
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of three pieces and a half, written and settled (a change after it is in a later
    /// tick of the clock), and its pieces from the version it was opened at.
    fn settled_file(directory: &Path) -> (PathBuf, Vec<u8>, Pieces) {
        let path = directory.join("photo");
        let bytes: Vec<u8> = (0..Pieces::PIECE * 7 / 2).map(|at| (at % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        std::thread::sleep(SETTLED_AFTER);
        let file = std::fs::File::open(&path).unwrap();
        let version = version_of(&file.metadata().unwrap());
        (path, bytes, Pieces::new(file, version))
    }

    async fn all(pieces: &mut Pieces) -> (Vec<u8>, Option<std::io::Error>) {
        let mut sent = Vec::new();
        while let Some(piece) = pieces.next().await {
            match piece {
                Ok(piece) => sent.extend_from_slice(&piece),
                Err(error) => return (sent, Some(error)),
            }
        }
        (sent, None)
    }

    #[tokio::test]
    async fn an_unchanged_file_is_sent_whole_in_pieces() {
        let directory = tempfile::tempdir().unwrap();
        let (_, bytes, mut pieces) = settled_file(directory.path());
        assert_eq!(pieces.length(), bytes.len() as u64);
        let (sent, error) = all(&mut pieces).await;
        assert!(error.is_none(), "{error:?}");
        assert_eq!(sent, bytes);
        assert!(pieces.next().await.is_none(), "nothing after the last piece");
    }

    #[tokio::test]
    async fn a_file_changed_while_it_is_sent_ends_in_an_error() {
        let directory = tempfile::tempdir().unwrap();
        let (path, bytes, mut pieces) = settled_file(directory.path());
        let first = pieces.next().await.unwrap().unwrap();
        assert_eq!(first, bytes[..first.len()]);
        // Changed behind what was sent, at the same length: only the version tells.
        let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.write_all(&[0xFF]).unwrap();
        let (sent, error) = all(&mut pieces).await;
        assert_eq!(error.unwrap().kind(), std::io::ErrorKind::InvalidData);
        assert!(first.len() + sent.len() < bytes.len(), "the last piece is held back");
        assert!(pieces.next().await.is_none(), "nothing after an error");
    }

    #[tokio::test]
    async fn a_file_cut_short_while_it_is_sent_ends_in_an_error() {
        let directory = tempfile::tempdir().unwrap();
        let (path, bytes, mut pieces) = settled_file(directory.path());
        pieces.next().await.unwrap().unwrap();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(10).unwrap();
        let (sent, error) = all(&mut pieces).await;
        assert_eq!(error.unwrap().kind(), std::io::ErrorKind::InvalidData);
        assert!(sent.len() < bytes.len());
    }
}
