//! A post's revisions, for its author: listed, read with what changed since, restored.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use super::caching;
use super::error::{ApiError, ApiResult, PROBLEM, ProblemDetails, ReadProblems, WriteProblems};
use super::extract::{Id, Ids, QueryParams};
use crate::app::lists::{ListPage, ListParams};
use crate::app::revisions::{RevisionRead, restore, revision, revisions_of};
use crate::app::{AppState, Caller};
use crate::model::{Post, Revision};

/// A revision's number, from the path.
fn number(text: &str) -> Result<u64, ApiError> {
    text.parse().ok().filter(|_| text.bytes().all(|byte| byte.is_ascii_digit())).ok_or_else(|| {
        ApiError::bad_request(format!("A revision's number is a whole number; {text:?} is not."))
    })
}

/// `GET /api/posts/{postId}/revisions`: the versions the post's edits replaced, newest first,
/// for its author alone: a point read of the post and one query on its partition.
#[utoipa::path(
    get,
    path = "/api/posts/{postId}/revisions",
    operation_id = "listRevisions",
    tag = "posts",
    params(("postId" = String, Path, description = "The post's id"), ListParams),
    responses(
        (status = 200, description = "The post's revisions, newest first", body = ListPage<Revision>),
        (status = 304, description = "Not modified since the ETag in If-None-Match"),
        (status = 403, description = "Another user's post", body = ProblemDetails, content_type = PROBLEM),
        (status = 404, description = "No such post, or another user's draft", body = ProblemDetails, content_type = PROBLEM),
        ReadProblems,
    ),
)]
pub(super) async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    caller: Caller,
    Id(post_id): Id,
    QueryParams(params): QueryParams<ListParams>,
) -> ApiResult<Response> {
    let revisions = revisions_of(&state, &caller, &post_id, &params).await?;
    Ok(caching::json_for(&headers, &revisions, true))
}

/// `GET /api/posts/{postId}/revisions/{number}`: one revision, and what changed from it to the
/// post as it is now, line by line.
#[utoipa::path(
    get,
    path = "/api/posts/{postId}/revisions/{number}",
    operation_id = "getRevision",
    tag = "posts",
    params(("postId" = String, Path, description = "The post's id"), ("number" = u64, Path, description = "The revision's number")),
    responses(
        (status = 200, description = "The revision, and the changes since", body = RevisionRead),
        (status = 304, description = "Not modified since the ETag in If-None-Match"),
        (status = 403, description = "Another user's post", body = ProblemDetails, content_type = PROBLEM),
        (status = 404, description = "No such post or revision", body = ProblemDetails, content_type = PROBLEM),
        ReadProblems,
    ),
)]
pub(super) async fn get(
    State(state): State<AppState>,
    headers: HeaderMap,
    caller: Caller,
    Ids(post_id, number_text): Ids,
) -> ApiResult<Response> {
    let read = revision(&state, &caller, &post_id, number(&number_text)?).await?;
    Ok(caching::json_for(&headers, &read, true))
}

/// `POST /api/posts/{postId}/revisions/{number}/restore`: the post back to the revision's
/// title, content and tags: an edit, which keeps the version it replaces as a revision too.
#[utoipa::path(
    post,
    path = "/api/posts/{postId}/revisions/{number}/restore",
    operation_id = "restoreRevision",
    tag = "posts",
    params(("postId" = String, Path, description = "The post's id"), ("number" = u64, Path, description = "The revision's number"), super::extract::IdempotencyKeyHeader),
    responses(
        (status = 200, description = "The post, restored", body = Post),
        (status = 403, description = "Another user's post", body = ProblemDetails, content_type = PROBLEM),
        (status = 404, description = "No such post or revision", body = ProblemDetails, content_type = PROBLEM),
        WriteProblems,
    ),
)]
pub(super) async fn restore_one(
    State(state): State<AppState>,
    caller: Caller,
    Ids(post_id, number_text): Ids,
) -> ApiResult<Json<Post>> {
    Ok(Json(restore(&state, &caller, &post_id, number(&number_text)?).await?))
}
