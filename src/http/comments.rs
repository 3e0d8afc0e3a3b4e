//! C3 (comment on a post), C6 (delete a comment) and Q4 (a post's comments).

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
use crate::app::comments::{create_comment, delete_comment};
use crate::app::kept::api_comments;
use crate::app::lists::{ListPage, ListParams};
use crate::app::{AppState, Caller};
use crate::model::Comment;

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct NewCommentBody {
    #[schema(schema_with = super::extract::item_id)]
    user_id: String,
    #[schema(
        min_length = 1,
        max_length = 2000,
        pattern = "^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F]*[^\\s\\u0000-\\u001F\\u007F-\\u009F][^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F]*$"
    )]
    content: String,
}

/// C3: `POST /api/posts/{postId}/comments`. The stored procedure `createComment` creates the
/// comment and increments the post's `commentCount` in one transaction.
#[utoipa::path(
    post,
    path = "/api/posts/{postId}/comments",
    operation_id = "createComment",
    tag = "posts",
    request_body = NewCommentBody,
    params(("postId" = String, Path, description = "The post's id"), super::extract::IdempotencyKeyHeader),
    responses(
        (status = 201, description = "C3: the comment, created and counted", body = Comment),
        (status = 404, description = "No such post", body = ProblemDetails, content_type = PROBLEM),
        (status = 409, description = "A request with the same Idempotency-Key is being made right now", body = ProblemDetails, content_type = PROBLEM),
        (status = 422, description = "No such user, or the Idempotency-Key was used for another request", body = ProblemDetails, content_type = PROBLEM),
        WriteProblems,
    ),
)]
pub(super) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Id(post_id): Id,
    JsonBody(body): JsonBody<NewCommentBody>,
) -> ApiResult<(StatusCode, Json<Comment>)> {
    let created = create_comment(&state, &caller, &post_id, &body.user_id, body.content).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// C6: `DELETE /api/posts/{postId}/comments/{commentId}`, by the comment's author or the post's
/// author (who moderates the comments under their post). The stored procedure `deleteComment`
/// checks who may, deletes the comment and decrements `commentCount`, in one transaction.
#[utoipa::path(
    delete,
    path = "/api/posts/{postId}/comments/{commentId}",
    operation_id = "deleteComment",
    tag = "posts",
    params(
        ("postId" = String, Path, description = "The post's id"),
        ("commentId" = String, Path, description = "The comment's id"),
        super::extract::IdempotencyKeyHeader,
    ),
    responses(
        (status = 204, description = "C6: the comment, deleted and uncounted"),
        (status = 404, description = "No such post, or no such comment on it", body = ProblemDetails, content_type = PROBLEM),
        DeleteProblems,
    ),
)]
pub(super) async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Ids(post_id, comment_id): Ids,
) -> ApiResult<StatusCode> {
    delete_comment(&state, &caller, &post_id, &comment_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Q4: `GET /api/posts/{postId}/comments`, oldest first: one query on the post's partition.
#[utoipa::path(
    get,
    path = "/api/posts/{postId}/comments",
    operation_id = "listComments",
    tag = "posts",
    params(("postId" = String, Path, description = "The post's id"), ListParams),
    responses(
        (status = 200, description = "Q4: the post's comments, oldest first", body = ListPage<Comment>),
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
    Ok(caching::json(
        &headers,
        &api_comments(&state, &post_id, &params, caching::freshness(&headers)).await?.value,
    ))
}
