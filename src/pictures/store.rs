//! Where pictures' bytes live: one interface, whatever holds them (the data directory on the
//! embedded store; Blob Storage on Azure, Azurite locally).

use std::path::Path;

use async_trait::async_trait;

use super::Kind;

/// A picture's name as stored and served: the SHA-256 of its bytes in hex and its extension
/// (the phones' variant is a picture of its own). Checked, so that a name is never a path.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PictureName(String);

impl PictureName {
    /// The name, if `text` is one.
    pub fn parse(text: &str) -> Option<PictureName> {
        let (hash, extension) = text.split_once('.')?;
        let is_hash = hash.len() == 64 && hash.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'));
        // (WebP is stored as JPEG or PNG: no stored picture is named `.webp`.)
        let stored = Kind::of_extension(extension).is_some_and(|kind| kind != Kind::WebP);
        (is_hash && stored).then(|| PictureName(text.to_owned()))
    }

    /// The kind of the picture, from its extension.
    pub fn kind(&self) -> Kind {
        let extension = self.0.rsplit_once('.').map_or("", |(_, extension)| extension);
        Kind::of_extension(extension).expect("checked by `parse`")
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why a picture store did not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum PictureStoreError {
    /// The disk refused: full, or failing.
    #[error("{path}: {source}")]
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
}

/// Holds pictures' bytes by name. A name holds one picture for good (names are content
/// addresses), so `put` of a name already there changes nothing, and readers may cache forever.
#[async_trait]
pub trait PictureStore: Send + Sync {
    /// Stores `bytes` as `name`; visible to [`PictureStore::get`] only once wholly durable.
    async fn put(&self, name: &PictureName, bytes: &[u8]) -> Result<(), PictureStoreError>;

    /// The picture `name`, or `None` where there is none.
    async fn get(&self, name: &PictureName) -> Result<Option<Vec<u8>>, PictureStoreError>;

    /// Removes `name`; nothing to remove is not an error.
    async fn delete(&self, name: &PictureName) -> Result<(), PictureStoreError>;
}
