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
    pub async fn query_all_partitions(&self, container: Container, query: QuerySpec) -> Result<Vec<Value>, StoreError> {
        let _settled = self.settled_container(container).await;
        let mut sdk_query = Query::from(query.sql.into_owned());
        for (name, value) in query.parameters {
            sdk_query = sdk_query
                .with_parameter(name.into_owned(), value)
                .map_err(|error| StoreError::sdk("a query parameter", error))?;
        }
        let options = QueryOptions::default().with_feed_options(whole_container());
        let mut pages =
            bounded(self.container(container).query_items::<Value>(sdk_query, FeedScope::full_container(), Some(options)))
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
    pub(crate) async fn change_feed_from_beginning(&self, container: Container) -> Result<ChangeFeed, StoreError> {
        self.change_feed_from(container, None).await
    }

    /// The change feed of `container` from `position` (a [`ChangeFeed::position`] saved
    /// earlier, one token for every feed range), or from its beginning.
    pub(crate) async fn change_feed_from(&self, container: Container, position: Option<&str>) -> Result<ChangeFeed, StoreError> {
        let client = self.container(container);
        let ranges = bounded(client.read_feed_ranges(None)).await?.len().max(1);
        let mut options = azure_data_cosmos::options::ChangeFeedOptions::default().with_feed_options(whole_container());
        if let Some(token) = position {
            options = options.with_continuation_token(ContinuationToken::from_string(token.to_owned()));
        }
        let options = Some(options);
        let start = ChangeFeedStartFrom::Beginning;
        let pages = bounded(client.query_change_feed::<Value>(FeedScope::full_container(), start, options)).await?;
        let locks = self.durability.as_ref().map(|durability| durability.locks().clone());
        Ok(ChangeFeed { container, pages, ranges, locks })
    }
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
