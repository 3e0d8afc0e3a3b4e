//! Q6: the newest posts, in short form, and the cache that lets the front page and
//! `GET /api/feed` cost one Cosmos query per second per instance, whatever the traffic.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::OnceCell;

use crate::cosmos::{Container, queries};
use crate::model::{FEED_PARTITION, Post};

use super::lists::{DEFAULT_FEED_SIZE, ListPage, ListParams, wrap_token};
use super::{AppResult, AppState};

/// How long one instance serves a feed page it read before reading `feed` again. Where the
/// local change-feed processors run, a change to the feed drops the cache at once; under the
/// Functions host, an instance that did not process the change shows it at most this late.
pub(crate) const FEED_CACHE_LIFETIME: Duration = Duration::from_secs(1);
/// The most feed pages kept at once (each page size and continuation is a page).
const MAX_CACHED_PAGES: usize = 256;

/// Q6, newest first, through the cache: one query on the single partition of `feed`, which
/// the change feed keeps at the newest 100 posts.
pub async fn feed_page(state: &AppState, params: &ListParams) -> AppResult<Arc<FeedPage>> {
    const LIST: &str = "feed";
    let page = params.page_request(&state.tokens, LIST, FEED_PARTITION, DEFAULT_FEED_SIZE)?;
    let key = (page.size, page.continuation.clone());
    let cell = state.feed.cell(key);
    let filled = cell
        .get_or_try_init(|| async {
            let found = state.store.query_page::<Post>(Container::Feed, FEED_PARTITION, queries::feed(), page).await?;
            let list = ListPage {
                items: found.items,
                continuation_token: wrap_token(&state.tokens, found.continuation, LIST, FEED_PARTITION),
            };
            AppResult::Ok(Arc::new(FeedPage::new(list)))
        })
        .await?;
    Ok(filled.clone())
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
type PageCell = Arc<OnceCell<Arc<FeedPage>>>;

/// The feed pages one instance read in the last [`FEED_CACHE_LIFETIME`]. Concurrent requests
/// for a page that is not there share one query (they wait on the same cell), so a burst of
/// front-page views costs one read of `feed`.
#[derive(Default)]
pub struct FeedCache {
    pages: Mutex<HashMap<PageKey, (Instant, PageCell)>>,
}

impl FeedCache {
    /// The cell for `key`: the fresh one, or a new empty one that the caller fills.
    fn cell(&self, key: PageKey) -> PageCell {
        let mut pages = self.pages.lock().expect("never poisoned");
        if let Some((born, cell)) = pages.get(&key)
            && born.elapsed() < FEED_CACHE_LIFETIME
        {
            return cell.clone();
        }
        if pages.len() >= MAX_CACHED_PAGES {
            pages.retain(|_, (born, _)| born.elapsed() < FEED_CACHE_LIFETIME);
        }
        let cell = PageCell::default();
        pages.insert(key, (Instant::now(), cell.clone()));
        cell
    }

    /// How many pages are held, fresh or not yet swept.
    pub fn cached_pages(&self) -> usize {
        self.pages.lock().expect("never poisoned").len()
    }

    /// Forgets every page: the feed changed (called by `PostsChangeFeed` after it wrote copies).
    /// A read already under way still answers its own waiters; the next request reads again.
    pub fn invalidate(&self) {
        self.pages.lock().expect("never poisoned").clear();
    }
}
