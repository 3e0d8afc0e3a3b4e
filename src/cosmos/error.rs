//! What a Cosmos call can come to, as the application tells outcomes apart.

use azure_data_cosmos::CosmosError;

use super::sdk::CALL_TIMEOUT;

/// The outcomes of a Cosmos call that the application tells apart.
#[derive(Debug)]
pub enum StoreError {
    NotFound,
    Conflict,
    PreconditionFailed,
    /// 429 after the SDK's own retries.
    Throttled,
    Timeout,
    /// A continuation token Cosmos refused.
    BadContinuation(String),
    /// A request Cosmos refused as malformed (400), e.g. a script's query that does not parse.
    BadRequest(String),
    /// A transactional batch failed; `statuses` holds each operation's status (the failing one,
    /// and 424 for the others).
    BatchFailed {
        statuses: Vec<u16>,
    },
    /// The embedded store's disk is full: the write was not committed, and was undone.
    DiskFull,
    Other(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::NotFound => f.write_str("not found"),
            StoreError::Conflict => f.write_str("conflict: the item exists"),
            StoreError::PreconditionFailed => f.write_str("precondition failed: the item changed"),
            StoreError::Throttled => f.write_str("throttled (429)"),
            StoreError::Timeout => write!(f, "no answer within {CALL_TIMEOUT:?}"),
            StoreError::BadContinuation(why) => write!(f, "invalid continuation token: {why}"),
            StoreError::BadRequest(why) => write!(f, "bad request: {why}"),
            StoreError::BatchFailed { statuses } => write!(f, "transactional batch failed: {statuses:?}"),
            StoreError::DiskFull => f.write_str("the disk is full: the write was not committed, and was undone"),
            StoreError::Other(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for StoreError {}

impl StoreError {
    pub(crate) fn from_cosmos(error: &CosmosError) -> StoreError {
        let status = error.status();
        match u16::from(status.status_code()) {
            400 => StoreError::BadRequest(error.to_string()),
            404 => StoreError::NotFound,
            409 => StoreError::Conflict,
            412 => StoreError::PreconditionFailed,
            429 => StoreError::Throttled,
            _ => StoreError::Other(error.to_string()),
        }
    }

    /// The status a batch operation's failure corresponds to, when it is the one that failed.
    pub fn batch_cause(&self) -> Option<u16> {
        match self {
            StoreError::BatchFailed { statuses } => statuses.iter().copied().find(|status| *status != 424),
            _ => None,
        }
    }
}
