//! Q8 as `GET /api/search?q=`: the published posts with the query's words, best first.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Deserialize;
use utoipa::IntoParams;

use super::caching;
use super::error::{ApiResult, ReadProblems};
use super::extract::QueryParams;
use crate::app::search::{SearchPage, search as search_posts};
use crate::app::{AppError, AppState, BadInput};

/// A search's query string.
#[derive(Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct SearchParams {
    /// What to search for: words (each required, in any of its forms), `"a phrase"`, `-word`
    /// to exclude one. At most 256 bytes, 32 words, 8 different words searched for.
    #[param(max_length = 256)]
    q: Option<String>,
    /// Results a page, 1 to 25 (default 10).
    #[param(minimum = 1, maximum = 25)]
    limit: Option<u32>,
    /// The `continuationToken` of the previous page of the same search, unchanged.
    #[param(max_length = 8192, pattern = "^[A-Za-z0-9_-]+$")]
    continuation_token: Option<String>,
}

/// Q8: `GET /api/search?q=`. A few single-partition reads of the index `words`, whatever the
/// number of posts: each word's head, the rarest word's best postings, one query of the
/// candidates' records, then the page's posts. Ranked by BM25F: a word in the title above one
/// in the tags above one in the body.
#[utoipa::path(
    get,
    path = "/api/search",
    operation_id = "searchPosts",
    tag = "search",
    params(SearchParams),
    responses(
        (status = 200, description = "Q8: the posts found, best first, with the authors and tags the query names (first page)", body = SearchPage),
        (status = 304, description = "Not modified since the ETag in If-None-Match"),
        ReadProblems,
    ),
)]
pub(crate) async fn search(
    State(state): State<AppState>,
    headers: HeaderMap,
    QueryParams(params): QueryParams<SearchParams>,
) -> ApiResult<Response> {
    let Some(q) = params.q else {
        return Err(AppError::Invalid(BadInput::Empty("q")).into());
    };
    let page = search_posts(&state, &q, params.limit, params.continuation_token.as_deref()).await?;
    Ok(caching::json(&headers, &page))
}
