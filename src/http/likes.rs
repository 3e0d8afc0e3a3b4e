//! C4 (like a post), C5 (unlike it) and Q5 (a post's likes).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use utoipa::ToSchema;

use super::caching;
use super::error::{
    ApiResult, DeleteProblems, PROBLEM, ProblemDetails, ReadProblems, WriteProblems,
};
use super::extract::{Id, Ids, JsonBody, QueryParams};
use crate::app::likes::{create_like, delete_like, likes_of};
use crate::app::lists::{ListPage, ListParams, OwnerKnown};
use crate::app::{AppState, Caller};
use crate::model::Like;

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct NewLikeBody {
    #[schema(schema_with = super::extract::item_id)]
    user_id: String,
}

/// C4: `POST /api/posts/{postId}/likes`. The stored procedure `createLike` creates the like
/// and increments `likeCount` in one transaction; a user's second like on a post is 409 and
/// changes nothing (the like's id is derived from the user).
#[utoipa::path(
    post,
    path = "/api/posts/{postId}/likes",
    operation_id = "createLike",
    tag = "posts",
    request_body = NewLikeBody,
    params(("postId" = String, Path, description = "The post's id"), super::extract::IdempotencyKeyHeader),
    responses(
        (status = 201, description = "C4: the like, created and counted", body = Like),
        (status = 404, description = "No such post", body = ProblemDetails, content_type = PROBLEM),
        (status = 409, description = "This user already likes the post, or a request with the same Idempotency-Key is being made right now", body = ProblemDetails, content_type = PROBLEM),
        (status = 422, description = "No such user, or the Idempotency-Key was used for another request", body = ProblemDetails, content_type = PROBLEM),
        WriteProblems,
    ),
)]
pub(super) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Id(post_id): Id,
    JsonBody(body): JsonBody<NewLikeBody>,
) -> ApiResult<(StatusCode, Json<Like>)> {
    let created = create_like(&state, &caller, &post_id, &body.user_id).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// C5: `DELETE /api/posts/{postId}/likes/{userId}`, by the liker only. The stored procedure
/// `deleteLike` deletes the like and decrements `likeCount` in one transaction; a second unlike
/// is 404 and changes nothing.
#[utoipa::path(
    delete,
    path = "/api/posts/{postId}/likes/{userId}",
    operation_id = "deleteLike",
    tag = "posts",
    params(
        ("postId" = String, Path, description = "The post's id"),
        ("userId" = String, Path, description = "The liker's id"),
        super::extract::IdempotencyKeyHeader,
    ),
    responses(
        (status = 204, description = "C5: the like, deleted and uncounted"),
        (status = 404, description = "No such post, or the user does not like it", body = ProblemDetails, content_type = PROBLEM),
        DeleteProblems,
    ),
)]
pub(super) async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Ids(post_id, user_id): Ids,
) -> ApiResult<StatusCode> {
    delete_like(&state, &caller, &post_id, &user_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Q5: `GET /api/posts/{postId}/likes`, oldest first: one query on the post's partition.
#[utoipa::path(
    get,
    path = "/api/posts/{postId}/likes",
    operation_id = "listLikes",
    tag = "posts",
    params(("postId" = String, Path, description = "The post's id"), ListParams),
    responses(
        (status = 200, description = "Q5: the post's likes, oldest first", body = ListPage<Like>),
        (status = 304, description = "Not modified since the ETag in If-None-Match"),
        (status = 404, description = "No such post", body = ProblemDetails, content_type = PROBLEM),
        ReadProblems,
    ),
)]
pub(super) async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    Id(post_id): Id,
    QueryParams(params): QueryParams<ListParams>,
) -> ApiResult<Response> {
    Ok(caching::json(&headers, &likes_of(&state, &post_id, &params, OwnerKnown::No).await?))
}
