//! Where pictures' bytes live: one interface, whatever holds them (the data directory on the
//! embedded store; Blob Storage on Azure, Azurite locally), and the names they live under.

use std::path::Path;

use async_trait::async_trait;

use crate::model::picture::{PictureAddress, PictureName};

/// How many pictures a writer keeps, and their bytes (their copies included: phones' variants,
/// small copies).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Pictures (a picture and its copies count once).
    pub pictures: u64,
    /// Bytes, of every stored file.
    pub bytes: u64,
}

impl Usage {
    /// What the listed names and sizes of one writer's files add up to.
    pub(crate) fn of<'a>(files: impl IntoIterator<Item = (&'a str, u64)>) -> Usage {
        let mut hashes = std::collections::HashSet::new();
        let mut usage = Usage::default();
        for (name, bytes) in files {
            if let Some(name) = PictureName::parse(name) {
                usage.bytes += bytes;
                hashes.insert(name.hash().to_owned());
            }
        }
        usage.pictures = hashes.len() as u64;
        usage
    }
}

/// Why a picture store did not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum PictureStoreError {
    /// The disk refused: full, or failing.
    #[error("{path}")]
    Io {
        /// The file or directory.
        path: String,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The store cannot be reached for a moment (503 to the writer, with `Retry-After`).
    #[error("the picture store is unavailable: {0}")]
    Unavailable(String),
    /// The store's settings cannot be used as given; the message says which.
    #[error("the picture store cannot be used: {0}")]
    Unusable(String),
}

impl PictureStoreError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> PictureStoreError {
        PictureStoreError::Io { path: path.display().to_string(), source }
    }

    /// Whether the same call may well succeed later: the store could not be reached, or the
    /// disk was full.
    pub(crate) fn is_passing(&self) -> bool {
        matches!(self, PictureStoreError::Unavailable(_)) || self.is_disk_full()
    }

    /// Whether the disk is full (507 to the writer, as for every write).
    pub(crate) fn is_disk_full(&self) -> bool {
        matches!(self, PictureStoreError::Io { source, .. } if source.kind() == std::io::ErrorKind::StorageFull)
    }
}

/// Which version of a stored file was read: what changes whenever its bytes may have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Version {
    /// A file of the data directory ([`super::directory`]): its device and inode, length, and
    /// times of last modification and change, in nanoseconds.
    File {
        /// `st_dev`.
        device: u64,
        /// `st_ino`.
        inode: u64,
        /// `st_size`.
        length: u64,
        /// `st_mtime`, in nanoseconds.
        modified_ns: i128,
        /// `st_ctime`, in nanoseconds.
        changed_ns: i128,
    },
    /// A blob ([`super::blob`]): its ETag.
    Blob(String),
}

impl Version {
    /// The file's length, where the version is a file's.
    pub(crate) fn file_length(&self) -> Option<u64> {
        match self {
            Version::File { length, .. } => Some(*length),
            Version::Blob(_) => None,
        }
    }

    /// Its bytes on the heap.
    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            Version::File { .. } => 0,
            Version::Blob(etag) => etag.capacity(),
        }
    }
}

/// A stored file's bytes as read, with what tells the version they are of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// The version they are of, where the store can tell it for certain; `None` where it cannot
    /// (the file changed while it was read, or too recently for its times to tell a change
    /// after it).
    pub version: Option<Version>,
    /// The SHA-256 (hex) the store recorded with the file when it wrote it, where it keeps one
    /// (a blob's metadata): what a phones' copy, named after its picture, is checked against.
    pub recorded_sha256: Option<String>,
}

/// Holds pictures' bytes by address. A name holds one picture for good (names are content
/// addresses), so `put` of an address already there changes nothing, and readers may cache
/// forever.
#[async_trait]
pub trait PictureStore: Send + Sync {
    /// Stores `bytes` at `address`; visible to [`PictureStore::get`] only once wholly durable.
    /// Answers the version written where the store tells it for certain (a blob's ETag), `None`
    /// where the file was there already or its version cannot be told yet.
    async fn put(
        &self,
        address: &PictureAddress,
        bytes: &[u8],
    ) -> Result<Option<Version>, PictureStoreError>;

    /// The picture at `address`, with the version read, or `None` where there is none.
    async fn read(&self, address: &PictureAddress) -> Result<Option<Stored>, PictureStoreError>;

    /// The version of the picture at `address`, told without reading it and on the calling
    /// thread. The store tells it where it can do so at the cost of one `stat` (the data
    /// directory). `None` where it cannot, or the picture is not there or its version not yet
    /// told for certain ([`PictureStore::read`] then says).
    fn version_now(&self, _address: &PictureAddress) -> Option<Version> {
        None
    }

    /// The file of the picture at `address`, opened, where the store keeps it on a local disk
    /// and it is still at `version`. A large picture checked before is then sent in pieces as
    /// it is read ([`super::directory::Pieces`]), never whole in memory. `None` where the store
    /// keeps no local files, or the file is another version now (it is then read and checked).
    fn open_at(&self, _address: &PictureAddress, _version: &Version) -> Option<std::fs::File> {
        None
    }

    /// How long a small file checked against its name may be served from memory without asking
    /// the store whether it is still there as it was. `None` for a store that tells a version
    /// cheaply ([`PictureStore::version_now`]): the data directory. Blob Storage bills every
    /// question as a read operation ([`super::verified`] says what the wait allows).
    fn kept_unasked_for(&self) -> Option<std::time::Duration> {
        None
    }

    /// The picture at `address`, or `None` where there is none.
    async fn get(&self, address: &PictureAddress) -> Result<Option<Vec<u8>>, PictureStoreError> {
        Ok(self.read(address).await?.map(|stored| stored.bytes))
    }

    /// Whether a picture is at `address` (without reading it).
    async fn contains(&self, address: &PictureAddress) -> Result<bool, PictureStoreError>;

    /// Removes the picture at `address`, if it is there (an upload refused after its phones'
    /// copy was stored takes that copy back).
    async fn remove(&self, address: &PictureAddress) -> Result<(), PictureStoreError>;

    /// Removes every picture of `owner`'s post `post`, and answers how many files it removed;
    /// nothing to remove is not an error.
    async fn remove_post(&self, owner: &str, post: &str) -> Result<usize, PictureStoreError>;

    /// The names of every picture of `owner`'s post `post` (their copies included), in
    /// no given order: what `handler export` carries with the post.
    async fn post_pictures(
        &self,
        owner: &str,
        post: &str,
    ) -> Result<Vec<PictureName>, PictureStoreError>;

    /// How many pictures `owner` keeps, and their bytes.
    async fn usage(&self, owner: &str) -> Result<Usage, PictureStoreError>;

    /// Every post that has pictures, with when its last picture was written: for the sweep of
    /// pictures added to posts that were never published ([`crate::app::pictures`]).
    async fn folders(&self) -> Result<Vec<PostFolder>, PictureStoreError>;
}

/// The pictures of one writer's post, as a whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostFolder {
    /// The writer.
    pub owner: String,
    /// The post.
    pub post: String,
    /// When its newest picture was written.
    pub last_written: std::time::SystemTime,
}
