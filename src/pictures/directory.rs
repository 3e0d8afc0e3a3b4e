//! The pictures of the embedded store: files in the data directory's `pictures/`, durable as
//! the rest of it.
//!
//! A picture is written to a temporary file, flushed to the disk, and only then renamed to its
//! name (and the directory flushed), so a name is there only with all of its bytes: a crash
//! (`kill -9`, a power cut) leaves at most a temporary file, which the next start removes, and
//! never a half picture under a name. Names are content addresses ([`super::Picture::name`]),
//! so a picture stored twice is the same file, and one never changes under its name.

use std::io::Write;
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::store::{PictureName, PictureStore, PictureStoreError};

/// Where temporary files start their names; no picture's name does.
const TEMPORARY: &str = ".partial-";

/// The pictures of a data directory.
pub struct DirectoryStore {
    root: PathBuf,
}

impl DirectoryStore {
    /// Opens `data_dir/pictures`, creating it, and removes what writes cut short left.
    pub fn open(data_dir: &Path) -> Result<DirectoryStore, PictureStoreError> {
        let root = data_dir.join("pictures");
        std::fs::create_dir_all(&root).map_err(|error| PictureStoreError::io(&root, error))?;
        for entry in std::fs::read_dir(&root).map_err(|error| PictureStoreError::io(&root, error))? {
            let entry = entry.map_err(|error| PictureStoreError::io(&root, error))?;
            if entry.file_name().to_string_lossy().starts_with(TEMPORARY) {
                let path = entry.path();
                std::fs::remove_file(&path).map_err(|error| PictureStoreError::io(&path, error))?;
                tracing::info!(path = %path.display(), "removed a picture whose write was cut short");
            }
        }
        Ok(DirectoryStore { root })
    }

    fn path(&self, name: &PictureName) -> PathBuf {
        self.root.join(name.as_str())
    }
}

#[async_trait]
impl PictureStore for DirectoryStore {
    async fn put(&self, name: &PictureName, bytes: &[u8]) -> Result<(), PictureStoreError> {
        let (root, path, bytes) = (self.root.clone(), self.path(name), bytes.to_vec());
        blocking(move || {
            if path.exists() {
                return Ok(());
            }
            let temporary = root.join(format!("{TEMPORARY}{}", uuid::Uuid::new_v4()));
            let written = (|| {
                let mut file = std::fs::File::create_new(&temporary)?;
                file.write_all(&bytes)?;
                file.sync_all()?;
                std::fs::rename(&temporary, &path)?;
                sync_directory(&root)
            })();
            if written.is_err() {
                let _ = std::fs::remove_file(&temporary);
            }
            written.map_err(|error| PictureStoreError::io(&path, error))
        })
        .await
    }

    async fn get(&self, name: &PictureName) -> Result<Option<Vec<u8>>, PictureStoreError> {
        let path = self.path(name);
        blocking(move || match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(PictureStoreError::io(&path, error)),
        })
        .await
    }

    async fn delete(&self, name: &PictureName) -> Result<(), PictureStoreError> {
        let (root, path) = (self.root.clone(), self.path(name));
        blocking(move || match std::fs::remove_file(&path) {
            Ok(()) => sync_directory(&root).map_err(|error| PictureStoreError::io(&root, error)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(PictureStoreError::io(&path, error)),
        })
        .await
    }
}

/// Flushes a directory's entries (a rename or a removal) to the disk.
fn sync_directory(directory: &Path) -> std::io::Result<()> {
    std::fs::File::open(directory)?.sync_all()
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, PictureStoreError> + Send + 'static,
) -> Result<T, PictureStoreError> {
    tokio::task::spawn_blocking(work).await.map_err(|error| PictureStoreError::Unavailable(error.to_string()))?
}
