//! Q6 as `GET /api/feed`, from the feed cache ([`crate::app::feed`]), with an ETag.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};

use super::caching;
use super::error::{ApiResult, ReadProblems};
use super::extract::QueryParams;
use crate::app::AppState;
use crate::app::feed::feed_page;
use crate::app::lists::{ListPage, ListParams};
use crate::model::Post;

/// Q6: `GET /api/feed?limit=x`, newest first: one query on the single partition of `feed`,
/// which the change feed keeps at the newest 100 posts; served from [`crate::app::feed::FeedCache`], with an ETag.
#[utoipa::path(
    get,
    path = "/api/feed",
    operation_id = "listFeed",
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
    // The page's JSON and its ETag were made once, when it was read: a 304 costs a comparison.
    let response = caching::if_none_match(&headers, &page.etag).unwrap_or_else(|| {
        ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], page.json.clone())
            .into_response()
    });
    Ok(caching::tagged(response, &page.etag, false))
}
