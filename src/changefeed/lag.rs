//! How far each change-feed function is behind: the changes not delivered to it yet, and how
//! old the oldest of them is. `handler lag` prints it, and a served blog logs it once a minute.
//! That is the workbook's and the lag alert's `lag` line; see `crate::running::followed` for
//! where.
//!
//! It is measured from the positions the functions are delivered from. Those are the embedded
//! store's processors' (their checkpoint files), or the account processors' of
//! `BLOG_CHANGE_FEED=local` (their `localProcessor-*` items). Or they are the Functions host's
//! Cosmos DB trigger's, whose leases keep, per feed range, the ETag of the last page delivered
//! (`trigger_positions`). From there the changes are read, as the function will be given them,
//! and counted. It counts items, not the transactions Cosmos DB's estimator counts
//! (azure-cosmos-dotnet-v3, `ChangeFeedEstimatorIterator`: the session token's LSN less the
//! first change's `_lsn`). Items are what the copies wait on, and the SDK here gives no session
//! token per range.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::{Function, account, processor};
use crate::app::AppState;
use crate::cosmos::{ChangeFeed, Container, QuerySpec, RangePosition, StoreError};

/// How far one function is behind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lag {
    /// The function.
    pub function: Function,
    /// Items changed after its position (an item written twice counts once, as the change feed
    /// delivers its latest version once).
    pub pending: usize,
    /// Whether counting stopped at its bound (an account's backlog is read to count it).
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
    /// The Functions host's Cosmos DB trigger, by its leases in `leases`.
    Trigger,
}

/// The most changes `handler lag` counts on an account: each is read from the change feed to be
/// counted, so a larger backlog is said as "at least" this many.
pub const COUNTED_AT_MOST: usize = 10_000;

/// The most the minute's `lag` line counts on an account. Every instance reads them, every
/// minute, while the backlog lasts: a thousand is enough to say the copies are far behind (the
/// age of the oldest says how far), and a tenth of the reading.
pub(crate) const REPORTED_AT_MOST: usize = 1_000;

/// How often a served blog logs the lag.
pub(crate) const REPORT_EVERY: Duration = Duration::from_secs(60);

/// The lag of each change-feed function; on an account, changes counted up to `at_most`.
pub async fn measure(
    state: &AppState,
    followed: &Followed,
    at_most: usize,
) -> Result<Vec<Lag>, StoreError> {
    let mut lags = Vec::new();
    for function in Function::ALL {
        let (pending, at_least, oldest_ts) = match followed {
            Followed::Embedded(data_dir) => {
                let (pending, oldest) = processor::pending(state, data_dir, function).await?;
                (pending, false, oldest)
            }
            Followed::Account | Followed::Trigger => {
                let feed = if let Followed::Account = followed {
                    let position = account::saved_position(state, function).await?;
                    state.store.change_feed_from(function.container(), position.as_deref()).await?
                } else {
                    let positions = trigger_positions(state, function).await?;
                    state.store.change_feed_at(function.container(), &positions).await?
                };
                let (pending, oldest) = count(feed, at_most).await?;
                (pending, pending >= at_most, oldest)
            }
        };
        let oldest = oldest_ts.filter(|_| pending > 0).map(age);
        lags.push(Lag { function, pending, at_least, oldest });
    }
    Ok(lags)
}

/// How soon after the start the lag is first logged: what a restart left behind shows at once.
pub(crate) const FIRST_REPORT_AFTER: Duration = Duration::from_secs(5);

/// Logs the lag once a minute while the blog runs, the first time [`FIRST_REPORT_AFTER`] after the start.
/// Like the pictures' sweep, the task holds the blog's state only while it measures.
pub(crate) fn spawn_reports(state: &AppState, followed: Followed) {
    let blog = state.downgrade();
    tokio::spawn(async move {
        tokio::time::sleep(FIRST_REPORT_AFTER).await;
        while let Some(state) = blog.upgrade() {
            match measure(&state, &followed, REPORTED_AT_MOST).await {
                Ok(lags) => lags.iter().for_each(report),
                Err(error) => {
                    tracing::warn!(target: "blog::changefeed", error = %crate::logging::with_causes(&error), "the change feed's lag could not be measured")
                }
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

/// How long ago an item whose `_ts` is `written` was written.
pub(super) fn age(written: u64) -> Duration {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    Duration::from_secs(now.saturating_sub(written))
}

/// The `_ts` of the oldest of `documents`.
pub(super) fn oldest_ts(documents: &[Value]) -> Option<u64> {
    documents.iter().filter_map(|document| document.get("_ts").and_then(Value::as_u64)).min()
}

/// The changes `feed` has to give, read and counted up to `at_most`, and the `_ts` of the oldest
/// of those counted.
async fn count(mut feed: ChangeFeed, at_most: usize) -> Result<(usize, Option<u64>), StoreError> {
    let (mut pending, mut oldest) = (0, None::<u64>);
    while pending < at_most {
        let Some(documents) = feed.next_changes().await? else { break };
        pending += documents.len();
        oldest = oldest.into_iter().chain(oldest_ts(&documents)).min();
    }
    Ok((pending.min(at_most), oldest))
}

/// The positions `function`'s trigger keeps: its leases in `leases`, the items whose id starts
/// with its `leaseContainerPrefix` and that have a `LeaseToken` (the store's `.info` and `.lock`
/// items have none). A lease as the trigger writes it (azure-cosmos-dotnet-v3,
/// `DocumentServiceLeaseCoreEpk`; the feed range by `FeedRangeInternalConverter` and
/// `RangeJsonConverter`): `{"id": "posts-<host>_<db>_<container>..<min>-<max>", "version": 1,
/// "LeaseToken": "<min>-<max>", "FeedRange": {"Range": {"min", "max", "isMinInclusive",
/// "isMaxInclusive"}}, "Owner", "ContinuationToken": "\"<lsn>\"" or null, "properties", "Mode",
/// "timestamp"}`.
pub(crate) async fn trigger_positions(
    state: &AppState,
    function: Function,
) -> Result<Vec<RangePosition>, StoreError> {
    let query = QuerySpec {
        sql: "SELECT * FROM c WHERE STARTSWITH(c.id, @prefix) AND IS_DEFINED(c.LeaseToken)".into(),
        parameters: vec![("@prefix".into(), Value::from(function.lease_prefix()))],
    };
    state
        .store
        .query_all_partitions(Container::Leases, query)
        .await?
        .iter()
        .map(lease_position)
        .collect()
}

/// One lease's range and position; a lease of the older kind (a partition key range id, without
/// `FeedRange`) is refused, naming it: the trigger of the extension bundle 4 writes none.
fn lease_position(lease: &Value) -> Result<RangePosition, StoreError> {
    let range = &lease["FeedRange"]["Range"];
    let (Some(min), Some(max)) = (range["min"].as_str(), range["max"].as_str()) else {
        return Err(StoreError::OlderLease { lease: lease["id"].to_string() });
    };
    let etag =
        lease["ContinuationToken"].as_str().filter(|etag| !etag.is_empty()).map(str::to_owned);
    Ok(RangePosition { min_epk: min.to_owned(), max_epk: max.to_owned(), etag })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lease of an older trigger (a partition key range id, no feed range) is refused, naming it.
    #[test]
    fn a_lease_without_a_feed_range_is_refused_naming_it() {
        let older = serde_json::json!({"id": "blog.info..0", "PartitionId": "0", "ContinuationToken": "\"12\""});
        let refused = lease_position(&older);
        assert!(
            matches!(&refused, Err(StoreError::OlderLease { lease }) if lease == "\"blog.info..0\""),
            "{refused:?}"
        );
    }
}
