//! Reading a container whole: a query across all its partitions, and its change feed.

use std::sync::Arc;

use azure_data_cosmos::feed::{ChangeFeedPageIterator, ContinuationToken};
use azure_data_cosmos::models::ChangeFeedItem;
use azure_data_cosmos::options::{ChangeFeedStartFrom, QueryOptions};
use azure_data_cosmos::{FeedScope, Query};
use futures::TryStreamExt;
use serde_json::Value;

use super::embedded;
use super::error::StoreError;
use super::items::QuerySpec;
use super::schema::Container;
use super::sdk::{bounded, response_charge};
use super::store::Store;
use super::{Meter, Scope};

impl Store {
    /// Every result of a query across all partitions of `container`, page after page. Only
    /// the change-feed functions use one (to find the posts a renamed user wrote in).
    pub async fn query_all_partitions(
        &self,
        container: Container,
        query: QuerySpec,
    ) -> Result<Vec<Value>, StoreError> {
        let _settled = self.settled_container(container).await;
        let mut sdk_query = Query::from(query.sql.into_owned());
        for (name, value) in query.parameters {
            sdk_query = sdk_query
                .with_parameter(name.into_owned(), value)
                .map_err(|error| StoreError::sdk("a query parameter", error))?;
        }
        let options = QueryOptions::default().with_feed_options(whole_container());
        let mut pages = bounded(self.container(container).query_items::<Value>(
            sdk_query,
            FeedScope::full_container(),
            Some(options),
        ))
        .await?
        .into_pages();
        let mut documents = Vec::new();
        while let Some(page) = bounded(pages.try_next()).await? {
            Meter::record(Scope::AllPartitions(container), response_charge(page.headers()));
            documents.extend(page.items().iter().cloned());
        }
        Ok(documents)
    }

    /// The change feed of `container` from its beginning: the latest version of every item.
    /// `rebuild-copies` reads it; the local processors follow the embedded store's numbered writes instead (see
    /// `changes.rs`).
    pub(crate) async fn change_feed_from_beginning(
        &self,
        container: Container,
    ) -> Result<ChangeFeed, StoreError> {
        self.change_feed_from(container, None).await
    }

    /// The change feed of `container` from `position` (a [`ChangeFeed::position`] saved
    /// earlier, one token for every feed range), or from its beginning.
    pub(crate) async fn change_feed_from(
        &self,
        container: Container,
        position: Option<&str>,
    ) -> Result<ChangeFeed, StoreError> {
        let client = self.container(container);
        let ranges = bounded(client.read_feed_ranges(None)).await?.len().max(1);
        let mut options = azure_data_cosmos::options::ChangeFeedOptions::default()
            .with_feed_options(whole_container());
        if let Some(token) = position {
            options =
                options.with_continuation_token(ContinuationToken::from_string(token.to_owned()));
        }
        let options = Some(options);
        let start = ChangeFeedStartFrom::Beginning;
        let pages =
            bounded(client.query_change_feed::<Value>(FeedScope::full_container(), start, options))
                .await?;
        let locks = self.durability.as_ref().map(|durability| durability.locks().clone());
        Ok(ChangeFeed { container, pages, ranges, locks })
    }
}

/// One feed range's position in a container's change feed, as the Functions host's Cosmos DB
/// trigger keeps it in a lease. It holds the range's effective partition keys, and the ETag the
/// service answered for the last page delivered from it (`None`: nothing delivered yet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangePosition {
    /// The range's lowest effective partition key (inclusive), in hex (`""` for the first).
    pub min_epk: String,
    /// Its highest (exclusive) (`"FF"` for the last).
    pub max_epk: String,
    /// The change feed's ETag there (the lease's `ContinuationToken`).
    pub etag: Option<String>,
}

impl Store {
    /// The change feed of `container` from the positions of `ranges`, as the trigger's leases
    /// hold them; a range with no ETag from the beginning (the trigger's `startFromBeginning`).
    ///
    /// For the change feed, the SDK keeps per feed range the service's ETag, which it sends
    /// again as `If-None-Match` (azure_data_cosmos_driver 1.0,
    /// `RequestNode::handle_change_feed_response`). The change feed processor of .NET keeps it
    /// the same way, in a lease's `ContinuationToken` (azure-cosmos-dotnet-v3,
    /// `ChangeFeedPartitionKeyResultSetIteratorCore`: "Change Feed uses etag as continuation
    /// token"). So the SDK's own position for this container from its beginning is taken, and
    /// each range's ETag set in it.
    pub(crate) async fn change_feed_at(
        &self,
        container: Container,
        ranges: &[RangePosition],
    ) -> Result<ChangeFeed, StoreError> {
        let from_beginning = decoded(&self.change_feed_from(container, None).await?.position()?)?;
        let token = at_positions(from_beginning, ranges)?;
        self.change_feed_from(container, Some(&encoded(&token))).await
    }

    /// Where the change feed of `container` ends now, range by range, as the trigger's leases
    /// would say after delivering every change: the feed read to its end, and each range's
    /// ETag taken from the SDK's position. The tests make leases of it.
    #[cfg(feature = "test-support")]
    pub async fn change_feed_end(
        &self,
        container: Container,
    ) -> Result<Vec<RangePosition>, StoreError> {
        let mut feed = self.change_feed_from(container, None).await?;
        while feed.next_changes().await?.is_some() {}
        let token = decoded(&feed.position()?)?;
        let ranges = token["root"]["active_tokens"].as_array().cloned().unwrap_or_default();
        Ok(ranges
            .iter()
            .map(|range| RangePosition {
                min_epk: range["min_epk"].as_str().unwrap_or_default().to_owned(),
                max_epk: range["max_epk"].as_str().unwrap_or_default().to_owned(),
                etag: range["server_continuation"].as_str().map(str::to_owned),
            })
            .collect())
    }
}

/// The JSON of the SDK's version 1 continuation token, `c1.` and base64url (azure_data_cosmos_driver
/// 1.0, `ContinuationToken::encode_v1`). A change feed's: `{"op": "ChangeFeed", "rid", "root":
/// {"kind": "unordered_merge", "start_from", "active_tokens": [{"min_epk", "max_epk",
/// "server_continuation"}]}}`, a range without an active token starting from `start_from`.
fn decoded(token: &str) -> Result<Value, StoreError> {
    use base64::Engine as _;
    let encoded = token.strip_prefix("c1.").ok_or_else(|| unusable("not a version 1 token"))?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(encoded)
        .map_err(|_| unusable("not base64url"))?;
    serde_json::from_slice(&bytes).map_err(|_| unusable("not JSON"))
}

/// A change feed's token from its beginning, with `ranges`' ETags as its active tokens.
fn at_positions(mut token: Value, ranges: &[RangePosition]) -> Result<Value, StoreError> {
    let root = token
        .get_mut("root")
        .filter(|root| root["kind"] == "unordered_merge")
        .ok_or_else(|| unusable("not an unordered merge"))?;
    let mut active: Vec<&RangePosition> =
        ranges.iter().filter(|range| range.etag.is_some()).collect();
    active.sort_by(|a, b| a.min_epk.cmp(&b.min_epk));
    root["active_tokens"] = active
        .into_iter()
        .map(|range| serde_json::json!({"min_epk": range.min_epk, "max_epk": range.max_epk, "server_continuation": range.etag}))
        .collect();
    Ok(token)
}

/// [`decoded`]'s token again.
fn encoded(token: &Value) -> String {
    use base64::Engine as _;
    format!("c1.{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string()))
}

fn unusable(why: &'static str) -> StoreError {
    StoreError::ChangeFeedToken { why }
}

/// Options for the calls that must reach every physical partition of a container by design
/// (the rename's query, the change feed from its beginning). The SDK refuses a fan-out past 100
/// partitions unless told otherwise (`DEFAULT_MAX_FAN_OUT`, `azure_data_cosmos_driver`
/// `options/plan_options.rs`), a guard against queries that reach every partition by accident;
/// the embedded `posts` has more than 100, and a large account may too.
fn whole_container() -> azure_data_cosmos::options::FeedOptions {
    azure_data_cosmos::options::FeedOptions::default().with_max_fan_out(u32::MAX)
}

/// A container's change feed, read page by page. The SDK serves one feed range per page, in
/// turn; a poll of every range that finds nothing means the reader has caught up.
pub(crate) struct ChangeFeed {
    container: Container,
    pages: ChangeFeedPageIterator<ChangeFeedItem<Value>>,
    ranges: usize,
    /// The embedded store's locks: each poll waits for the container's pending writes.
    locks: Option<Arc<embedded::locks::Locks>>,
}

impl ChangeFeed {
    /// One page: the documents changed in one feed range since its last poll (often none).
    async fn poll(&mut self) -> Result<Vec<Value>, StoreError> {
        let _settled = match &self.locks {
            Some(locks) => Some(locks.whole(self.container).await),
            None => None,
        };
        let Some(page) = bounded(self.pages.try_next()).await? else { return Ok(Vec::new()) };
        Meter::record(Scope::AllPartitions(self.container), response_charge(page.headers()));
        Ok(page.items().iter().filter_map(|item| item.current().cloned()).collect())
    }

    /// Where the reader is: every change of the pages read so far is behind it. Saved, it starts
    /// a later [`Store::change_feed_from`] there.
    pub(crate) fn position(&self) -> Result<String, StoreError> {
        self.pages
            .to_continuation_token()
            .map(|token| token.as_str().to_owned())
            .map_err(|error| StoreError::sdk("the change feed's position cannot be read", error))
    }

    /// The next changes, or `None` once a poll of every feed range in a row found nothing (the
    /// reader has caught up).
    pub(crate) async fn next_changes(&mut self) -> Result<Option<Vec<Value>>, StoreError> {
        for _ in 0..self.ranges {
            let documents = self.poll().await?;
            if !documents.is_empty() {
                return Ok(Some(documents));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::{RangePosition, at_positions, decoded, encoded};

    /// The position of a change feed read from its beginning, as the SDK writes it (taken from
    /// `ChangeFeed::position` on the embedded store) takes the leases' ETags as its ranges' tokens.
    #[test]
    fn a_fresh_position_takes_the_leases_etags() {
        let fresh = "c1.eyJvcCI6IkNoYW5nZUZlZWQiLCJyaWQiOiJBQUFBQVlBQUFBST0iLCJyb290Ijp7ImtpbmQiOiJ1bm9yZGVyZWRfbWVyZ2UiLCJzdGFydF9mcm9tIjp7ImtpbmQiOiJiZWdpbm5pbmcifX19";
        let ranges = [
            RangePosition {
                min_epk: "80".into(),
                max_epk: "FF".into(),
                etag: Some("\"42\"".into()),
            },
            RangePosition { min_epk: "".into(), max_epk: "80".into(), etag: Some("\"7\"".into()) },
            RangePosition { min_epk: "FF".into(), max_epk: "FF".into(), etag: None },
        ];
        let token =
            decoded(&encoded(&at_positions(decoded(fresh).unwrap(), &ranges).unwrap())).unwrap();
        assert_eq!(token["rid"], "AAAAAYAAAAI=");
        assert_eq!(
            token["root"]["start_from"]["kind"], "beginning",
            "a range without a position starts at the beginning"
        );
        assert_eq!(
            token["root"]["active_tokens"],
            serde_json::json!([
                {"min_epk": "", "max_epk": "80", "server_continuation": "\"7\""},
                {"min_epk": "80", "max_epk": "FF", "server_continuation": "\"42\""},
            ])
        );
        use crate::cosmos::StoreError::ChangeFeedToken;
        assert!(matches!(decoded("opaque"), Err(ChangeFeedToken { why: "not a version 1 token" })));
        let drained =
            at_positions(serde_json::json!({"root": {"kind": "sequential_drain"}}), &ranges);
        assert!(matches!(drained, Err(ChangeFeedToken { why: "not an unordered merge" })));
    }
}
