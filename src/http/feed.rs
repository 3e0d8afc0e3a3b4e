//! Q6: the newest posts, in short form, and the cache that lets the front page and
//! `GET /api/feed` cost one Cosmos query per second per instance, whatever the traffic.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::OnceCell;

use super::AppState;
use super::extract::QueryParams;
use super::lists::{DEFAULT_FEED_SIZE, ListPage, ListParams, wrap_token};
use crate::cosmos::{Container, queries};
use crate::error::{ApiResult, ReadProblems};
use crate::model::{FEED_PARTITION, Post};

/// How long one instance serves a feed page it read before reading `feed` again. Where the
/// local change-feed processors run, a change to the feed drops the cache at once; under the
/// Functions host, an instance that did not process the change shows it at most this late.
pub const FEED_CACHE_LIFETIME: Duration = Duration::from_secs(1);
/// How clients and shared caches may keep an anonymous feed answer: as long as the instance
/// does, then revalidate with the ETag.
pub const FEED_CACHE_CONTROL: &str = "public, max-age=1, must-revalidate";
/// The most feed pages kept at once (each page size and continuation is a page).
const MAX_CACHED_PAGES: usize = 256;

/// Q6: `GET /api/feed?limit=x`, newest first: one query on the single partition of `feed`,
/// which the change feed keeps at the newest 100 posts; served from [`FeedCache`], with an ETag.
#[utoipa::path(
    get,
    path = "/api/feed",
    tag = "feed",
    params(ListParams),
    responses(
        (status = 200, description = "Q6: the newest short posts, newest first", body = ListPage<Post>),
        (status = 304, description = "Not modified since the ETag in If-None-Match"),
        ReadProblems,
    ),
)]
pub async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    QueryParams(params): QueryParams<ListParams>,
) -> ApiResult<Response> {
    let page = feed_page(&state, &params).await?;
    let mut response = if_none_match(&headers, &page.etag).unwrap_or_else(|| {
        ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], page.json.clone()).into_response()
    });
    let headers = response.headers_mut();
    headers.insert(header::ETAG, HeaderValue::from_str(&page.etag).expect("an etag is a header value"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(FEED_CACHE_CONTROL));
    Ok(response)
}

/// Q6, for the API and the front page, through the cache.
pub async fn feed_page(state: &AppState, params: &ListParams) -> ApiResult<Arc<FeedPage>> {
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
            ApiResult::Ok(Arc::new(FeedPage::new(list)))
        })
        .await?;
    Ok(filled.clone())
}

/// A feed page as read, with its JSON answer and that answer's ETag.
pub struct FeedPage {
    pub list: ListPage<Post>,
    pub json: String,
    pub etag: String,
}

impl FeedPage {
    fn new(list: ListPage<Post>) -> FeedPage {
        let json = serde_json::to_string(&list).expect("a page serializes");
        let etag = etag_of(json.as_bytes());
        FeedPage { list, json, etag }
    }
}

/// A strong ETag for `bytes`: the same on every instance running the same build (SipHash with
/// fixed keys), so a CDN in front of several instances revalidates with any of them.
pub fn etag_of(bytes: &[u8]) -> String {
    let mut hasher = std::hash::DefaultHasher::new();
    bytes.hash(&mut hasher);
    format!("\"{:016x}\"", hasher.finish())
}

/// 304 Not Modified, without a body, when `If-None-Match` names `etag` (or `*`).
pub fn if_none_match(headers: &HeaderMap, etag: &str) -> Option<Response> {
    let matches = headers.get_all(header::IF_NONE_MATCH).iter().filter_map(|value| value.to_str().ok()).any(|value| {
        value.split(',').map(str::trim).any(|candidate| candidate == "*" || candidate.trim_start_matches("W/") == etag)
    });
    matches.then(|| StatusCode::NOT_MODIFIED.into_response())
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
