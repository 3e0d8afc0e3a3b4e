//! Q6: the newest posts, in short form.

use axum::Json;
use axum::extract::State;

use super::AppState;
use super::extract::QueryParams;
use super::lists::{DEFAULT_FEED_SIZE, ListPage, ListParams, wrap_token};
use crate::cosmos::{Container, queries};
use crate::error::{ApiResult, ReadProblems};
use crate::model::{FEED_PARTITION, Post};

/// Q6: `GET /api/feed?limit=x`, newest first: one query on the single partition of `feed`,
/// which the change feed keeps at the newest 100 posts.
#[utoipa::path(
    get,
    path = "/api/feed",
    tag = "feed",
    params(ListParams),
    responses(
        (status = 200, description = "Q6: the newest short posts, newest first", body = ListPage<Post>),
        ReadProblems,
    ),
)]
pub async fn list(
    State(state): State<AppState>,
    QueryParams(params): QueryParams<ListParams>,
) -> ApiResult<Json<ListPage<Post>>> {
    const LIST: &str = "feed";
    let page = params.page_request(&state.tokens, LIST, FEED_PARTITION, DEFAULT_FEED_SIZE)?;
    let found = state.store.query_page::<Post>(Container::Feed, FEED_PARTITION, queries::feed(), page).await?;
    Ok(Json(ListPage {
        items: found.items,
        continuation_token: wrap_token(&state.tokens, found.continuation, LIST, FEED_PARTITION),
    }))
}
