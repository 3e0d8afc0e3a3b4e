//! How far each change-feed function is behind: the changes not delivered to it yet, and how
//! old the oldest of them is. `handler lag` prints it, and a blog whose processors run in the
//! handler logs it once a minute (the workbook's and the lag alert's `lag` line).
//!
//! It is measured where the handler knows the position: the embedded store's processors (their
//! checkpoint files) and the account processors of `BLOG_CHANGE_FEED=local` (their
//! `localProcessor-*` items). The Functions host's trigger keeps its positions in leases, as a
//! change-feed ETag per feed range; Cosmos DB's estimator reads one change from each lease's
//! ETag (azure-cosmos-dotnet-v3, `ChangeFeedEstimatorIterator.GetRemainingWorkAsync`), and the
//! Rust SDK cannot resume a feed range from a server's ETag (azure_data_cosmos_driver 1.0,
//! `CosmosOperation::is_trivial`: only a partition key's change feed takes one). There the
//! delivered batches' `oldest_age_s` is the figure (docs/deploy.md, "Reading the workbook").

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::{Function, account, processor};
use crate::app::AppState;
use crate::cosmos::StoreError;

/// How far one function is behind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lag {
    /// The function.
    pub function: Function,
    /// Items changed after its position (an item written twice counts once, as the change feed
    /// delivers its latest version once).
    pub pending: usize,
    /// Whether counting stopped at [`COUNTED_AT_MOST`] (an account's backlog is read to count it).
    pub at_least: bool,
    /// How long ago the oldest of them was written (`None` when nothing is pending).
    pub oldest: Option<Duration>,
}

/// Whose positions are measured.
#[derive(Clone, Debug)]
pub enum Followed {
    /// The embedded store's processors, with their checkpoints in this data directory.
    Embedded(PathBuf),
    /// The account processors of `BLOG_CHANGE_FEED=local`.
    Account,
}

/// The most changes counted on an account: each is read from its change feed to be counted, so
/// a large backlog is said as "at least" this many rather than read whole every minute.
pub const COUNTED_AT_MOST: usize = 10_000;

/// How often a blog whose processors run in the handler logs their lag.
pub const REPORT_EVERY: Duration = Duration::from_secs(60);

/// The lag of each change-feed function.
pub async fn measure(state: &AppState, followed: &Followed) -> Result<Vec<Lag>, StoreError> {
    let mut lags = Vec::new();
    for function in Function::ALL {
        let ((pending, at_least), oldest_ts) = match followed {
            Followed::Embedded(data_dir) => {
                let (pending, oldest) = processor::pending(state, data_dir, function).await?;
                ((pending, false), oldest)
            }
            Followed::Account => {
                let (pending, oldest) = account::pending(state, function, COUNTED_AT_MOST).await?;
                ((pending, pending >= COUNTED_AT_MOST), oldest)
            }
        };
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let oldest = oldest_ts.filter(|_| pending > 0).map(|written| Duration::from_secs(now.saturating_sub(written)));
        lags.push(Lag { function, pending, at_least, oldest });
    }
    Ok(lags)
}

/// How soon after the start the lag is first logged: what a restart left behind shows at once.
pub const FIRST_REPORT_AFTER: Duration = Duration::from_secs(5);

/// Logs the lag once a minute while the blog runs, the first time [`FIRST_REPORT_AFTER`] after the start.
/// Like the pictures' sweep, the task holds the blog's state only while it measures.
pub(crate) fn spawn_reports(state: &AppState, followed: Followed) {
    let blog = state.downgrade();
    tokio::spawn(async move {
        tokio::time::sleep(FIRST_REPORT_AFTER).await;
        while let Some(state) = blog.upgrade() {
            match measure(&state, &followed).await {
                Ok(lags) => lags.iter().for_each(report),
                Err(error) => tracing::warn!(target: "blog::changefeed", %error, "the change feed's lag could not be measured"),
            }
            drop(state);
            tokio::time::sleep(REPORT_EVERY).await;
        }
    });
}

/// One function's `lag` line: the fields the workbook's lag chart and the lag alert read.
pub(crate) fn report(lag: &Lag) {
    tracing::info!(
        target: "blog::changefeed",
        function = lag.function.name(),
        changes = lag.pending,
        at_least = lag.at_least,
        oldest_age_s = lag.oldest.map_or(0, |age| age.as_secs()),
        "lag"
    );
}

/// The `_ts` of the oldest of `documents`.
pub(super) fn oldest_ts(documents: &[Value]) -> Option<u64> {
    documents.iter().filter_map(|document| document.get("_ts").and_then(Value::as_u64)).min()
}
