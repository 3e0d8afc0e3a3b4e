//! Why the store or the blog did not open, apart from what a store call comes to
//! ([`StoreError`]). A call's error is retried, or answered as a status; an open error stops the
//! start, and its message names what the operator must do next.

#[cfg(feature = "embedded")]
use std::path::PathBuf;

#[cfg(feature = "embedded")]
use super::Container;
use super::StoreError;
#[cfg(feature = "embedded")]
use super::embedded::{checksum, emulator::RestoreError, legacy::ImportError};
#[cfg(feature = "embedded")]
use super::error::ImportMark;

/// The refusals of opening the store or the blog, each with what to do; and a store call that
/// failed while opening.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// A store call failed while the store or the blog opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The Entra ID credential could not be set up.
    #[error("{what}")]
    Identity {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: azure_core::Error,
    },
    /// The embedded store's database was written by a newer handler.
    #[cfg(feature = "embedded")]
    #[error(
        "{} was written by a newer handler (its schema is version {version}; this handler knows version {known} and \
         older): run that handler's version or a newer one on it, or restore the data directory from a backup made \
         for this version",
        path.display()
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// The version it holds.
        version: i64,
        /// The newest version this handler knows.
        known: i64,
    },
    /// Another handler process holds the data directory.
    #[cfg(feature = "embedded")]
    #[error("{} is in use by another handler process", dir.display())]
    InUse {
        /// The data directory.
        dir: PathBuf,
    },
    /// `handler repair` or `handler remove` stopped before it finished: only a repair may open
    /// the data directory.
    #[cfg(feature = "embedded")]
    #[error(
        "a repair of {} did not finish (the handler stopped during `handler repair` or `handler remove`): run \
         `BLOG_DATA_DIR={} handler repair` to finish it",
        path.display(),
        checksum::shell_quoted(&dir.display().to_string())
    )]
    RepairUnfinished {
        /// The database file.
        path: PathBuf,
        /// Its data directory.
        dir: PathBuf,
    },
    /// `handler import` stopped while it wrote: the blog would show its items half written, so
    /// only the same import may open the data directory, and it finishes it.
    #[cfg(feature = "embedded")]
    #[error(
        "an import into {} did not finish (the handler stopped during `handler import`), so the blog would show part of it: \
         run the same import again to finish it, {}; the blog starts once it has",
        dir.display(),
        ImportMark { sha256: sha256.clone(), file: file.clone() }.command(dir)
    )]
    ImportUnfinished {
        /// The data directory.
        dir: PathBuf,
        /// The file's SHA-256 ([`ImportMark`]).
        sha256: String,
        /// The file as the import was given it (`None`: standard input).
        file: Option<String>,
    },
    /// The earlier store's file is imported, but its `*.imported` name is taken.
    #[cfg(feature = "embedded")]
    #[error(
        "{} is imported into the database, but cannot be renamed to {}, which is already there (from an earlier \
         import, or put there by hand). Move {1} out of the data directory (or delete it if you no longer need it), \
         then start again",
        file.display(),
        kept.display()
    )]
    ImportedNameTaken {
        /// The imported file.
        file: PathBuf,
        /// The name it would be renamed to.
        kept: PathBuf,
    },
    /// The database holds data, and the earlier store's files beside it too: which to keep is the
    /// operator's choice.
    #[cfg(feature = "embedded")]
    #[error(
        "{} holds data, and so do the earlier store's {} and {} beside it: move one or the other away",
        database.display(),
        super::embedded::legacy::SNAPSHOT,
        super::embedded::legacy::JOURNAL
    )]
    TwoStores {
        /// The database file.
        database: PathBuf,
    },
    /// The earlier store's files cannot be imported.
    #[cfg(feature = "embedded")]
    #[error("cannot import the data directory")]
    Import(#[from] ImportError),
    /// A stored item the embedded store's emulator refused when the store was loaded at start.
    #[cfg(feature = "embedded")]
    #[error(
        "{}: the item {id:?} of {} (partition key {partition_key:?}) cannot be loaded. Restore the data directory \
         from a backup; or, to go on without it, stop the blog and run `{}`, which removes it with what depends on it \
         and leaves the rest consistent",
        path.display(),
        container.name(),
        checksum::remove_command(path, *container, partition_key, id)
    )]
    Unloadable {
        /// The database file.
        path: PathBuf,
        /// The item's container.
        container: Container,
        /// Its partition key.
        partition_key: String,
        /// Its id.
        id: String,
        /// Why the emulator refused it (boxed: the SDK's error is large, and every result of the
        /// open path carries this enum's size).
        #[source]
        refusal: Box<RestoreError>,
    },
    /// The configuration names the embedded store, and this build has none.
    #[error("this build has no embedded store")]
    NoEmbeddedStore,
    /// The server-side scripts were asked for on an account reached with Entra ID, and the store
    /// has no credential.
    #[error("the server-side scripts need an Entra ID credential, and the store has none")]
    NoCredential,
    /// The client of the server-side scripts cannot be built (boxed: whatever its constructor
    /// answers, so that this variant does not follow that type).
    #[error("the server-side scripts cannot be set up")]
    Scripts(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The picture store the configuration names cannot be opened.
    #[error("the picture store cannot be opened")]
    Pictures(#[source] crate::pictures::PictureStoreError),
    /// The embedded store's database does not hold what it recorded holding (rows deleted or put
    /// in outside the handler): what differs, and what to do.
    #[cfg(feature = "embedded")]
    #[error(transparent)]
    Incomplete(Box<crate::cosmos::Incomplete>),
}
