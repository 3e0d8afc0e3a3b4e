//! Files that appear whole or not at all.

use std::io::{Read, Write};

/// A file written under a temporary name beside where it is to be, and renamed to its name only
/// once whole and on the disk. An export stopped (an error, Ctrl-C, a kill, a power cut) leaves
/// the file that was there before, or none, never a cut one. A temporary file a kill left
/// behind (`.NAME.partial-…`, hidden) is removed by the next export to the same name; one
/// stopped otherwise removes its own.
pub struct PartialFile {
    path: std::path::PathBuf,
    temporary: std::path::PathBuf,
    file: Option<std::io::BufWriter<std::fs::File>>,
}

impl PartialFile {
    /// A new temporary file beside `path`, after removing those left beside it by exports killed.
    pub fn beside(path: &std::path::Path) -> std::io::Result<PartialFile> {
        let name = path
            .file_name()
            .ok_or_else(|| std::io::Error::other("names a directory, not a file"))?;
        let directory = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
            _ => std::path::PathBuf::from("."),
        };
        let prefix = format!(".{}.partial-", name.to_string_lossy());
        for entry in std::fs::read_dir(&directory)? {
            let entry = entry?;
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                std::fs::remove_file(entry.path())?;
                tracing::info!(path = %entry.path().display(), "removed what an export stopped before its end left");
            }
        }
        let temporary = directory.join(format!("{prefix}{}", uuid::Uuid::new_v4()));
        let file = std::fs::File::create_new(&temporary)?;
        Ok(PartialFile {
            path: path.to_owned(),
            temporary,
            file: Some(std::io::BufWriter::with_capacity(1 << 20, file)),
        })
    }

    /// Where to write.
    pub fn writer(&mut self) -> &mut dyn Write {
        self.file.as_mut().expect("written only before it is finished")
    }

    /// Puts the whole file on the disk, then under its name (in place of what was there).
    pub fn finish(mut self) -> std::io::Result<()> {
        let file = self.file.take().expect("finished once");
        let renamed = (|| {
            let file = file.into_inner().map_err(std::io::IntoInnerError::into_error)?;
            file.sync_all()?;
            std::fs::rename(&self.temporary, &self.path)
        })();
        if renamed.is_err() {
            let _ = std::fs::remove_file(&self.temporary);
        }
        renamed?;
        // The rename itself on the disk.
        match self.temporary.parent() {
            Some(directory) => std::fs::File::open(directory)?.sync_all(),
            None => Ok(()),
        }
    }
}

impl Drop for PartialFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.temporary);
        }
    }
}

/// Standard input, copied into a temporary file (an import reads its file twice: once to check
/// it, once to write it), removed when dropped. Memory holds none of it at once.
pub struct Spooled {
    path: std::path::PathBuf,
}

impl Spooled {
    /// `input`, copied whole into a new file in the system's temporary directory.
    pub fn from(input: &mut dyn Read) -> std::io::Result<Spooled> {
        let path =
            std::env::temp_dir().join(format!("cosmos-blog-import-{}.jsonl", uuid::Uuid::new_v4()));
        let spooled = Spooled { path };
        let mut file = std::fs::File::create_new(&spooled.path)?;
        std::io::copy(input, &mut file)?;
        Ok(spooled)
    }

    /// Where it is.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}

impl Drop for Spooled {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
