//! Q6: the newest posts, in short form, and the cache that lets the front page, the Atom feed
//! and `GET /api/feed` cost one point read a second per instance while nothing is posted: pages
//! kept and checked by the feed's change mark ([`super::marked`]), which `PostsChangeFeed` writes
//! after each change it makes to `feed`.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::cosmos::{Container, queries};
use crate::model::{FEED_MARK_ID, FEED_MARK_PARTITION, FEED_PARTITION, Post};

use super::lists::{DEFAULT_FEED_SIZE, ListPage, ListParams, wrap_token};
use super::marked::{Checked, MAX_LIST_BYTES, Mark, MarkedPages, Weigh};
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
        .page(state, key, FEED_MARK, || async {
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

/// A feed page as read, with its JSON answer and that answer's ETag, and what adapters render
/// of it once for everyone ([`FeedPage::rendering`]).
pub struct FeedPage {
    /// The page's posts, newest first, and the token of the next page.
    pub list: ListPage<Post>,
    /// The page as the API answers it, serialized once for every reader of the cached page.
    pub json: String,
    /// The page's entity tag, for `If-None-Match`.
    pub etag: String,
    renderings: Mutex<HashMap<String, Arc<Rendering>>>,
}

/// A representation of a feed page that is the same for everyone who asks for it (the front
/// page as a reader who is not signed in sees it): its bytes and their ETag.
pub(crate) struct Rendering {
    pub body: Bytes,
    pub etag: String,
}

/// How many renderings one feed page keeps. The pages key them by the address the blog was
/// reached at and the page size asked for, which clients choose: past this many, a rendering is
/// made for its request and not kept.
const MAX_RENDERINGS: usize = 4;

impl Weigh for FeedPage {
    /// Its posts, their JSON, and the renderings it may keep (each about as long as the JSON
    /// of a page of short posts), counted ahead as a post view counts its rendering.
    fn weight(&self) -> usize {
        self.list.weight() + (1 + MAX_RENDERINGS) * self.json.len()
    }
}

impl FeedPage {
    fn new(list: ListPage<Post>) -> FeedPage {
        let json = serde_json::to_string(&list).expect("a page serializes");
        let etag = etag_of(json.as_bytes());
        FeedPage { list, json, etag, renderings: Mutex::default() }
    }

    /// The rendering kept under `key`, or the one `render` makes (kept while there is room).
    /// Rendering the front page on every view cost about half the handler's time per view (25k
    /// against 47k front pages a second, BENCHMARKS.md); kept with the page it renders, it lives
    /// exactly as long as the page is served.
    pub(crate) fn rendering(&self, key: &str, render: impl FnOnce() -> String) -> Arc<Rendering> {
        if let Some(kept) = self.renderings.lock().expect("never poisoned").get(key) {
            return kept.clone();
        }
        let body = render();
        let rendering = Arc::new(Rendering { etag: etag_of(body.as_bytes()), body: Bytes::from(body) });
        let mut renderings = self.renderings.lock().expect("never poisoned");
        if renderings.len() < MAX_RENDERINGS { renderings.entry(key.to_owned()).or_insert(rendering).clone() } else { rendering }
    }
}

/// A strong ETag for `bytes`: the same on every instance running the same build (SipHash with
/// fixed keys), so a CDN in front of several instances revalidates with any of them.
pub(crate) fn etag_of(bytes: &[u8]) -> String {
    let mut hasher = std::hash::DefaultHasher::new();
    bytes.hash(&mut hasher);
    format!("\"{:016x}\"", hasher.finish())
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
