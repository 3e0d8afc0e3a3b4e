//! What a Cosmos call can come to, as the application tells outcomes apart.

use azure_data_cosmos::CosmosError;

use std::time::Duration;

/// How long any one Cosmos call may take before the request gives up on it: then it is
/// [`StoreError::Timeout`].
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The outcomes of a Cosmos call that the application tells apart, and the failures it does
/// not, each with its cause.
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
    #[error("{what}: {source}")]
    Sdk {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: CosmosError,
    },
    /// An item that does not serialize, or a stored item of another shape than the code reads.
    #[error("{what}: {source}")]
    Json {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: serde_json::Error,
    },
    /// The embedded store's database refused an operation.
    #[cfg(feature = "embedded")]
    #[error("{what}: {source}")]
    Database {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: rusqlite::Error,
    },
    /// A file of the data directory could not be read or written.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// The Entra ID credential could not be set up.
    #[error("{what}: {source}")]
    Identity {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: azure_core::Error,
    },
    /// A change-feed processor's checkpoint cannot be used; the error names the file and what to do.
    #[error(transparent)]
    Checkpoint(#[from] super::CheckpointError),
    /// The data directory or the configuration cannot be used as they are; the message says what
    /// to do.
    #[error("{0}")]
    Unusable(String),
    /// The embedded store's database does not hold what it recorded holding (rows deleted or put
    /// in outside the handler): what differs, and what to do.
    #[cfg(feature = "embedded")]
    #[error(transparent)]
    Incomplete(Box<crate::cosmos::Incomplete>),
    /// Work that had to finish did not (a task that died, writes that kept conflicting).
    #[error("{0}")]
    Unfinished(String),
}

impl StoreError {
    pub(crate) fn from_cosmos(error: CosmosError) -> StoreError {
        match u16::from(error.status().status_code()) {
            400 => StoreError::BadRequest(error.to_string()),
            404 => StoreError::NotFound,
            409 => StoreError::Conflict,
            412 => StoreError::PreconditionFailed,
            429 => {
                let retry_after_ms = error.response().and_then(|response| response.headers().retry_after_ms);
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
        matches!(self, StoreError::Throttled { .. } | StoreError::Timeout | StoreError::Unavailable(_))
    }

    /// The status a batch operation's failure corresponds to, when it is the one that failed.
    pub(crate) fn batch_cause(&self) -> Option<u16> {
        match self {
            StoreError::BatchFailed { statuses } => statuses.iter().copied().find(|status| *status != 424),
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
