//! C3 (comment on a post) and Q4 (a post's comments).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;

use super::AppState;
use super::extract::{Id, JsonBody, QueryParams, validate_id, validate_text};
use super::lists::{DEFAULT_PAGE_SIZE, ListPage, ListParams, wrap_token};
use super::posts::{existing_author, post_not_found};
use crate::cosmos::{Container, queries};
use crate::error::{ApiError, ApiResult};
use crate::model::{self, Comment, MAX_COMMENT_CHARS};
use crate::scripts::{CounterOutcome, StoredProcedure};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewCommentBody {
    user_id: String,
    content: String,
}

/// C3: `POST /api/posts/{postId}/comments`. The stored procedure `createComment` creates the
/// comment and increments the post's `commentCount` in one transaction.
pub async fn create(
    State(state): State<AppState>,
    Id(post_id): Id,
    JsonBody(body): JsonBody<NewCommentBody>,
) -> ApiResult<(StatusCode, Json<Comment>)> {
    validate_id(&body.user_id).map_err(|why| ApiError::bad_request(format!("`userId` is not valid: {why}")))?;
    validate_text("content", &body.content, MAX_COMMENT_CHARS, true)?;
    let author = existing_author(&state, &body.user_id).await?;
    let comment = model::new_comment(model::new_id(), &post_id, &author, body.content, model::now());
    let body = state.scripts.execute(StoredProcedure::CreateComment, &post_id, (&post_id, &comment)).await?;
    match CounterOutcome::<Comment>::from_body(body)? {
        CounterOutcome::Created(created) => Ok((StatusCode::CREATED, Json(created))),
        CounterOutcome::PostNotFound => Err(post_not_found(&post_id)),
        CounterOutcome::AlreadyLiked => Err(ApiError::internal("createComment answered alreadyLiked")),
    }
}

/// Q4: `GET /api/posts/{postId}/comments`, oldest first: one query on the post's partition.
pub async fn list(
    State(state): State<AppState>,
    Id(post_id): Id,
    QueryParams(params): QueryParams<ListParams>,
) -> ApiResult<Json<ListPage<Comment>>> {
    const LIST: &str = "comments";
    let page = params.page_request(LIST, &post_id, DEFAULT_PAGE_SIZE)?;
    let found = state.store.query_page::<Comment>(Container::Posts, &post_id, queries::post_comments(), page).await?;
    Ok(Json(ListPage { items: found.items, continuation_token: wrap_token(found.continuation, LIST, &post_id) }))
}
