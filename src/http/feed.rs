//! Q6 as `GET /api/feed`, from the feed cache ([`crate::app::feed`]), with an ETag.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error::{ApiResult, ReadProblems};
use super::extract::QueryParams;
use crate::app::AppState;
use crate::app::feed::feed_page;
use crate::app::lists::{ListPage, ListParams};
use crate::model::Post;

/// How clients and shared caches may keep an anonymous feed answer: as long as the instance
/// does, then revalidate with the ETag.
pub(crate) const FEED_CACHE_CONTROL: &str = "public, max-age=1, must-revalidate";
/// Q6: `GET /api/feed?limit=x`, newest first: one query on the single partition of `feed`,
/// which the change feed keeps at the newest 100 posts; served from [`crate::app::feed::FeedCache`], with an ETag.
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
pub(crate) async fn list(
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

/// 304 Not Modified, without a body, when `If-None-Match` names `etag` (or `*`).
pub(crate) fn if_none_match(headers: &HeaderMap, etag: &str) -> Option<Response> {
    let matches = headers.get_all(header::IF_NONE_MATCH).iter().filter_map(|value| value.to_str().ok()).any(|value| {
        value.split(',').map(str::trim).any(|candidate| candidate == "*" || candidate.trim_start_matches("W/") == etag)
    });
    matches.then(|| StatusCode::NOT_MODIFIED.into_response())
}
