//! What a Cosmos call can come to, as the application tells outcomes apart. Why the store or
//! the blog did not open is another type's ([`super::OpenError`]): what a caller does differs.

use azure_data_cosmos::CosmosError;

#[cfg(feature = "embedded")]
use std::path::PathBuf;
use std::time::Duration;

use super::Container;
#[cfg(feature = "embedded")]
use super::embedded::{checksum, database::Damage};

/// How long any one Cosmos call may take before the request gives up on it: then it is
/// [`StoreError::Timeout`].
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The outcomes of a Cosmos call that the application tells apart, and the failures it does
/// not, each with its cause. The refusals of opening the store are [`super::OpenError`]'s.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The item, or the partition's items, do not exist (404).
    #[error("not found")]
    NotFound,
    /// The item's id is taken (409).
    #[error("conflict: the item exists")]
    Conflict,
    /// The item changed since it was read (412).
    #[error("precondition failed: the item changed")]
    PreconditionFailed,
    /// 429 after the SDK's own retries.
    #[error("throttled (429)")]
    Throttled {
        /// How long Cosmos DB asked to wait before the next request (`x-ms-retry-after-ms`),
        /// when it said.
        retry_after: Option<Duration>,
    },
    /// The call did not answer within [`CALL_TIMEOUT`].
    #[error("no answer within {CALL_TIMEOUT:?}")]
    Timeout,
    /// A passing failure Cosmos DB itself answered, after the SDK's own retries: 408 (it did not
    /// finish in time), 410 (the partition moved), 449 (retry with: concurrent writes), 503
    /// (unavailable for a moment), 500/502/504 (it failed). A write may or may not have been
    /// applied.
    #[error("the database is unavailable for a moment ({0})")]
    Unavailable(u16),
    /// A continuation token Cosmos refused.
    #[error("invalid continuation token: {0}")]
    BadContinuation(String),
    /// A request Cosmos refused as malformed (400), e.g. a script's query that does not parse.
    #[error("bad request: {0}")]
    BadRequest(String),
    /// A transactional batch failed; `statuses` holds each operation's status (the failing one,
    /// and 424 for the others).
    #[error("transactional batch failed: {statuses:?}")]
    BatchFailed {
        /// Each operation's status, in the batch's order.
        statuses: Vec<u16>,
    },
    /// The embedded store's disk is full: the write was not committed, and was undone.
    #[error("the disk is full: the write was not committed, and was undone")]
    DiskFull,
    /// A Cosmos DB call failed for a reason the application does not act on (another status, the
    /// transport, an answer the SDK cannot read, a client that cannot be built).
    #[error("{what}")]
    Sdk {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: CosmosError,
    },
    /// An item that does not serialize, or a stored item of another shape than the code reads.
    #[error("{what}")]
    Json {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: serde_json::Error,
    },
    /// The embedded store's database refused an operation.
    #[cfg(feature = "embedded")]
    #[error("{what}")]
    Database {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: rusqlite::Error,
    },
    /// A file of the data directory could not be read or written.
    #[error("{what}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// A change-feed processor's checkpoint cannot be used; the error names the file and what to do.
    #[error(transparent)]
    Checkpoint(#[from] super::CheckpointError),
    /// A row of the embedded store's database whose bytes are not those it was written with:
    /// not served; the message says what to do.
    #[cfg(feature = "embedded")]
    #[error("{}", checksum::mismatch(path, *container, partition_key, id))]
    ChecksumMismatch {
        /// The database file.
        path: PathBuf,
        /// The row's container.
        container: Container,
        /// Its partition key.
        partition_key: String,
        /// Its id.
        id: String,
        /// The checksum stored with it.
        expected: u32,
        /// The checksum of what it holds.
        found: u32,
    },
    /// The embedded store's database file is damaged, or is not this store's: what to do. Mostly
    /// met at opening, but the expiry sweep's reads meet it too (a row of an unknown container).
    #[cfg(feature = "embedded")]
    #[error("{}", checksum::damaged(path, damage))]
    Damaged {
        /// The database file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        damage: Damage,
    },
    /// What was asked works on the embedded store only, and this configuration names an account.
    #[error("{what} needs the embedded store; this configuration names a Cosmos DB account")]
    NotEmbedded {
        /// What was asked.
        what: &'static str,
    },
    /// A lease written by an older trigger (a partition key range id, no feed range), whose
    /// position is not read here.
    #[error(
        "the lease {lease} has no feed range (FeedRange.Range.min and max): a lease of an older trigger, whose \
         position is not read here"
    )]
    OlderLease {
        /// The lease's id, as JSON.
        lease: String,
    },
    /// The SDK's change-feed position is not of the shape the leases' positions are written into.
    #[error("the SDK's change feed position cannot take the leases' positions: {why}")]
    ChangeFeedToken {
        /// What the position is not.
        why: &'static str,
    },
    /// An item to write without a string `id`.
    #[error("an item to write has no string id")]
    NoId,
    /// A container's properties without its `_self` link, which a server-side script needs.
    #[error("container {} has no _self", container.name())]
    NoSelfLink {
        /// The container.
        container: Container,
    },
    /// A request record in a batch as other than its creation: a bug.
    #[error("a request record ({id:?}) is only ever created, in a batch with its write")]
    RecordNotCreated {
        /// The record's id.
        id: String,
    },
    /// A task that had to finish died first (it panicked, or the runtime was shutting down).
    #[cfg(feature = "embedded")]
    #[error("{work} did not finish")]
    TaskDied {
        /// What the task was doing, as a log line says it ("the write's commit").
        work: &'static str,
        /// How it ended.
        #[source]
        source: tokio::task::JoinError,
    },
    /// The embedded store's database refused to commit a write, and the write was undone.
    #[cfg(feature = "embedded")]
    #[error("the write could not be committed, so it was undone: {reason}")]
    NotCommitted {
        /// The database's reason, in its words: one refusal answers every write of a group, so
        /// it is kept as text, not as the database's error.
        reason: String,
    },
    /// A post's copy that changed under every try to write it (each try conditioned on the copy
    /// it read).
    #[error("the copy of post {post_id} in {} kept changing", container.name())]
    CopyKeptChanging {
        /// The post copied.
        post_id: String,
        /// Where the copy is.
        container: Container,
    },
    /// The change log, changed by another writer under every try to append to it (each try
    /// conditioned on the log it read): the names are appended by the delivery's next try.
    #[error("the change log kept changing under {attempts} tries to append {names} names to it")]
    ChangeLogKeptChanging {
        /// How often the append was tried.
        attempts: usize,
        /// How many names were to be appended.
        names: usize,
    },
    /// A stored procedure that does its work a batch at a time, called as often as it may be
    /// without saying it was done.
    #[error("{procedure} did not finish in post {post_id}")]
    ProcedureUnfinished {
        /// The procedure's name.
        procedure: &'static str,
        /// The partition it worked in.
        post_id: String,
    },
}

impl StoreError {
    pub(crate) fn from_cosmos(error: CosmosError) -> StoreError {
        match u16::from(error.status().status_code()) {
            400 => StoreError::BadRequest(error.to_string()),
            404 => StoreError::NotFound,
            409 => StoreError::Conflict,
            412 => StoreError::PreconditionFailed,
            429 => {
                let retry_after_ms =
                    error.response().and_then(|response| response.headers().retry_after_ms);
                // Still throttled after the SDK's own retries: the account is short of request
                // units. One line each, for the workbook's and the alerts' count of 429s.
                tracing::warn!(target: "blog::cosmos", status = 429, retry_after_ms, "throttled");
                StoreError::Throttled { retry_after: retry_after_ms.map(Duration::from_millis) }
            }
            status @ (408 | 410 | 449 | 503) => {
                tracing::warn!(status, error = %crate::logging::with_causes(&error), "Cosmos DB is unavailable for a moment");
                StoreError::Unavailable(status)
            }
            // Cosmos DB's own failure, still there after the SDK's retries: an error to look
            // into, and, to the caller, a request to send again (its write may have been applied).
            status @ (500 | 502 | 504) => {
                tracing::error!(status, error = %crate::logging::with_causes(&error), "Cosmos DB failed");
                StoreError::Unavailable(status)
            }
            _ => StoreError::sdk("the Cosmos DB call failed", error),
        }
    }

    /// [`StoreError::Sdk`], saying what was being done.
    pub(crate) fn sdk(what: impl Into<String>, source: CosmosError) -> StoreError {
        StoreError::Sdk { what: what.into(), source }
    }

    /// [`StoreError::Json`], saying what was being read or written.
    pub(crate) fn json(what: impl Into<String>, source: serde_json::Error) -> StoreError {
        StoreError::Json { what: what.into(), source }
    }

    /// [`StoreError::Database`], saying what was being done.
    #[cfg(feature = "embedded")]
    pub(crate) fn database(what: impl Into<String>, source: rusqlite::Error) -> StoreError {
        StoreError::Database { what: what.into(), source }
    }

    /// [`StoreError::Io`], saying what was being done (the embedded store's files).
    #[cfg(feature = "embedded")]
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> StoreError {
        StoreError::Io { what: what.into(), source }
    }

    /// Whether the same call may well succeed in a moment: the database throttled, did not
    /// answer in time, or was unavailable.
    pub(crate) fn is_passing(&self) -> bool {
        matches!(
            self,
            StoreError::Throttled { .. } | StoreError::Timeout | StoreError::Unavailable(_)
        )
    }

    /// The status a batch operation's failure corresponds to, when it is the one that failed.
    pub(crate) fn batch_cause(&self) -> Option<u16> {
        match self {
            StoreError::BatchFailed { statuses } => {
                statuses.iter().copied().find(|status| *status != 424)
            }
            _ => None,
        }
    }

    /// A failed batch as the error its failing operation would be on its own (404, 409, 412,
    /// 429); any other failure as it is. The one reading of a batch's statuses.
    pub(crate) fn of_failed_operation(self) -> StoreError {
        match self.batch_cause() {
            Some(404) => StoreError::NotFound,
            Some(409) => StoreError::Conflict,
            Some(412) => StoreError::PreconditionFailed,
            Some(429) => StoreError::Throttled { retry_after: None },
            _ => self,
        }
    }
}

#[cfg(test)]
mod tests;

/// What an import that writes records in the embedded store, so that the store is refused until
/// it has finished (`handler import`). It is the file it imports, by its digest (its last
/// line's SHA-256) and its path as given (`None`: standard input).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct ImportMark {
    /// The file's SHA-256, as its last line says it.
    pub sha256: String,
    /// The file's path as the import was given it; `None` for standard input.
    pub file: Option<String>,
}

impl ImportMark {
    /// The command that finishes the import, into the data directory `dir`, its words quoted
    /// for the shell.
    #[cfg(feature = "embedded")]
    pub(crate) fn command(&self, dir: &std::path::Path) -> String {
        let dir = checksum::shell_quoted(&dir.display().to_string());
        match &self.file {
            Some(file) => {
                format!("`BLOG_DATA_DIR={dir} handler import {}`", checksum::shell_quoted(file))
            }
            None => format!(
                "`BLOG_DATA_DIR={dir} handler import < FILE`, FILE being the export it read from standard input (its last \
                 line's SHA-256 is {})",
                self.sha256
            ),
        }
    }
}
