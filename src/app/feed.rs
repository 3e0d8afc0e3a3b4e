//! Q6: the newest posts, in short form, and the cache that lets the front page, the Atom feed
//! and `GET /api/feed` cost nothing while nothing is posted: pages kept and checked by the
//! blog's change log, or where it cannot say by the feed's change mark ([`super::marked`]), which
//! `PostsChangeFeed` writes after each change it makes to `feed`.

use std::sync::Arc;

use crate::cosmos::{Container, queries};
use crate::model::{FEED_MARK_ID, FEED_MARK_PARTITION, FEED_PARTITION, Post};

use super::lists::{DEFAULT_FEED_SIZE, ListPage, ListParams, wrap_token};
use super::marked::{Checked, MAX_LIST_BYTES, Mark, MarkedPages, Weigh, etag_of};
use super::{AppResult, AppState};

/// The most feed pages kept at once (each page size and continuation is a page).
const MAX_CACHED_PAGES: usize = 256;

/// The feed's change mark.
const FEED_MARK: Mark<'static> = Mark { container: Container::Feed, partition_key: FEED_MARK_PARTITION, id: FEED_MARK_ID };

/// Q6, newest first, through the cache: one query on the single partition of `feed`, which
/// the change feed keeps at the newest 100 posts; or, for a page kept longer than a second, one
/// point read of the feed's change mark when it did not change.
pub async fn feed_page(state: &AppState, params: &ListParams) -> AppResult<Arc<Checked<FeedPage>>> {
    const LIST: &str = "feed";
    let page = params.page_request(&state.tokens, LIST, FEED_PARTITION, DEFAULT_FEED_SIZE)?;
    let key = (page.size, page.continuation.clone());
    state
        .feed
        .pages
        .page(state, key, super::changes::FEED, FEED_MARK, || async {
            let found = state.store.query_page::<Post>(Container::Feed, FEED_PARTITION, queries::feed(), page).await?;
            let list = ListPage {
                items: found.items,
                continuation_token: wrap_token(&state.tokens, found.continuation, LIST, FEED_PARTITION),
            };
            Ok(FeedPage::new(list))
        })
        .await
}

/// Writes the feed's change mark again: after every change made to the feed's posts, and after
/// a change that may have been made before a failure (a delivery repeated), so that no instance
/// keeps showing a page the change made old.
pub(crate) async fn mark_feed_changed(state: &AppState) -> AppResult<()> {
    FEED_MARK.write(state, FEED_MARK_PARTITION).await
}

/// A feed page as read, with its JSON answer and that answer's ETag (what adapters render of it
/// once for everyone is kept beside it: [`Checked::rendering`]).
pub struct FeedPage {
    /// The page's posts, newest first, and the token of the next page.
    pub list: ListPage<Post>,
    /// The page as the API answers it, serialized once for every reader of the cached page.
    pub json: String,
    /// The page's entity tag, for `If-None-Match`.
    pub etag: String,
}

impl Weigh for FeedPage {
    /// Its posts and their JSON.
    fn weight(&self) -> usize {
        self.list.weight() + self.json.len()
    }
}

impl FeedPage {
    fn new(list: ListPage<Post>) -> FeedPage {
        let json = serde_json::to_string(&list).expect("a page serializes");
        let etag = etag_of(json.as_bytes());
        FeedPage { list, json, etag }
    }
}

type PageKey = (u32, Option<String>);

/// The feed pages one instance keeps.
pub struct FeedCache {
    pages: MarkedPages<PageKey, FeedPage>,
}

impl Default for FeedCache {
    fn default() -> Self {
        FeedCache { pages: MarkedPages::within(MAX_CACHED_PAGES, MAX_LIST_BYTES) }
    }
}

impl FeedCache {
    /// How many pages are held, fresh or not yet swept.
    pub fn cached_pages(&self) -> usize {
        self.pages.len()
    }

    /// Forgets every page: the feed changed (called by `PostsChangeFeed` after it wrote copies).
    /// A read already under way still answers its own waiters; the next request reads again.
    pub fn invalidate(&self) {
        self.pages.forget(|_| true);
    }
}
