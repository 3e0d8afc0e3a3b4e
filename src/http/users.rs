//! C1 (create, edit user), Q1 (get user) and Q3 (a user's posts). Usernames are unique: the
//! steps that keep them so are in [`crate::app::usernames`].

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

use super::caching;
use super::error::{ApiResult, PROBLEM, ProblemDetails, ReadProblems, WriteProblems};
use super::extract::{Id, JsonBody, QueryParams};
use crate::app::lists::{ListPage, ListParams, OwnerKnown};
use crate::app::users::{create_user, drafts_of, get_user, posts_of, rename_user};
use crate::app::{AppState, Caller};
use crate::model::{Post, User};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct UserBody {
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F\\u202A-\\u202E\\u2066-\\u2069]*[^\\s\\u0000-\\u001F\\u007F-\\u009F\\u202A-\\u202E\\u2066-\\u2069\\u00AD\\u034F\\u061C\\u115F\\u1160\\u17B4\\u17B5\\u180B-\\u180F\\u200B-\\u200F\\u2060-\\u206F\\u3164\\uFE00-\\uFE0F\\uFEFF\\uFFA0\\uFFF0-\\uFFF8][^\\u0000-\\u001F\\u007F-\\u009F\\u202A-\\u202E\\u2066-\\u2069]*$"
    )]
    username: String,
}

/// C1 create: `POST /api/users`: the caller's own user (one per principal; 409 for a second),
/// with a username nobody else has (409 when taken).
#[utoipa::path(
    post,
    path = "/api/users",
    operation_id = "createUser",
    tag = "users",
    request_body = UserBody,
    params(super::extract::IdempotencyKeyHeader),
    responses(
        (status = 201, description = "C1: the user, created (also when the caller's user exists with exactly this username: the same request sent again)", body = User),
        (status = 409, description = "The caller already has a user, or another user has this username (compared ignoring case and Unicode form)", body = ProblemDetails, content_type = PROBLEM),
        (status = 422, description = "The Idempotency-Key was used for another request", body = ProblemDetails, content_type = PROBLEM),
        WriteProblems,
    ),
)]
pub(super) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<UserBody>,
) -> ApiResult<impl IntoResponse> {
    let user = create_user(&state, &caller, body.username).await?;
    let location = format!("/api/users/{}", user.id);
    Ok((StatusCode::CREATED, [(header::LOCATION, location)], Json(user)))
}

/// C1 edit: `PUT /api/users/{userId}`. The new name reaches the user's posts, comments, likes
/// and post copies through the change feed; `renamedAt` tells it that there may be some to
/// update.
#[utoipa::path(
    put,
    path = "/api/users/{userId}",
    operation_id = "editUser",
    tag = "users",
    request_body = UserBody,
    params(("userId" = String, Path, description = "The user's id"), super::extract::IdempotencyKeyHeader),
    responses(
        (status = 200, description = "C1: the user, renamed", body = User),
        (status = 404, description = "No such user", body = ProblemDetails, content_type = PROBLEM),
        (status = 409, description = "Another user has this username (compared ignoring case and Unicode form)", body = ProblemDetails, content_type = PROBLEM),
        (status = 422, description = "The Idempotency-Key was used for another request", body = ProblemDetails, content_type = PROBLEM),
        WriteProblems,
    ),
)]
pub(super) async fn edit(
    State(state): State<AppState>,
    caller: Caller,
    Id(user_id): Id,
    JsonBody(body): JsonBody<UserBody>,
) -> ApiResult<Json<User>> {
    Ok(Json(rename_user(&state, &caller, &user_id, body.username).await?))
}

/// Q1: `GET /api/users/{userId}`, one point read.
#[utoipa::path(
    get,
    path = "/api/users/{userId}",
    operation_id = "getUser",
    tag = "users",
    params(("userId" = String, Path, description = "The user's id")),
    responses(
        (status = 200, description = "Q1: the user", body = User),
        (status = 304, description = "Not modified since the ETag in If-None-Match"),
        (status = 404, description = "No such user", body = ProblemDetails, content_type = PROBLEM),
        ReadProblems,
    ),
)]
pub(super) async fn get(
    State(state): State<AppState>,
    headers: HeaderMap,
    Id(user_id): Id,
) -> ApiResult<Response> {
    Ok(caching::json(&headers, &get_user(&state, &user_id).await?))
}

/// Who the caller is, as the handler sees them.
#[derive(serde::Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Me {
    /// The caller's principal id, which is their user's id (C1 creates it with this id).
    pub user_id: String,
}

/// `GET /api/me`: the signed-in caller's user id, no store operation. A user IS a principal,
/// and a client with a token knows its token, not the id the platform derives from it (App
/// Service Authentication's `X-MS-CLIENT-PRINCIPAL-ID`). This says which `userId` its writes
/// must name, and where its user is (`GET /api/users/{userId}`, 404 until C1 created it).
#[utoipa::path(
    get,
    path = "/api/me",
    operation_id = "getMe",
    tag = "users",
    responses(
        (status = 200, description = "The caller's user id", body = Me),
        (status = 401, description = "Nobody is signed in", body = ProblemDetails, content_type = PROBLEM),
        (status = 403, description = "The caller's principal id cannot be a user id", body = ProblemDetails, content_type = PROBLEM),
        ReadProblems,
    ),
)]
pub(super) async fn me(
    caller: Caller,
    QueryParams(NoParams {}): QueryParams<NoParams>,
) -> Json<Me> {
    Json(Me { user_id: caller.id })
}

/// The query string of a request that takes no parameters: any is refused, as everywhere in the API.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoParams {}

/// `GET /api/users/{userId}/drafts`: the caller's own drafts, newest first, in short form: one
/// query on their partition of `users`, where the change feed keeps a copy of each (as of Q3's
/// posts). Nobody else's: 403.
#[utoipa::path(
    get,
    path = "/api/users/{userId}/drafts",
    operation_id = "listUserDrafts",
    tag = "users",
    params(("userId" = String, Path, description = "The user's id: the caller's"), ListParams),
    responses(
        (status = 200, description = "The caller's drafts in short form, newest first", body = ListPage<Post>),
        (status = 304, description = "Not modified since the ETag in If-None-Match"),
        (status = 401, description = "Nobody signed in", body = ProblemDetails, content_type = PROBLEM),
        (status = 403, description = "Another user's drafts", body = ProblemDetails, content_type = PROBLEM),
        ReadProblems,
    ),
)]
pub(crate) async fn list_drafts(
    State(state): State<AppState>,
    headers: HeaderMap,
    caller: Caller,
    Id(user_id): Id,
    QueryParams(params): QueryParams<ListParams>,
) -> ApiResult<Response> {
    let drafts = drafts_of(&state, &caller, &user_id, &params).await?;
    Ok(caching::json_for(&headers, &drafts, true))
}

/// Q3: `GET /api/users/{userId}/posts`, newest first: one query on the user's own partition of
/// `users`, which holds the short copies of their posts.
#[utoipa::path(
    get,
    path = "/api/users/{userId}/posts",
    operation_id = "listUserPosts",
    tag = "users",
    params(("userId" = String, Path, description = "The user's id"), ListParams),
    responses(
        (status = 200, description = "Q3: the user's short posts, newest first", body = ListPage<Post>),
        (status = 304, description = "Not modified since the ETag in If-None-Match"),
        (status = 404, description = "No such user", body = ProblemDetails, content_type = PROBLEM),
        ReadProblems,
    ),
)]
pub(crate) async fn list_posts(
    State(state): State<AppState>,
    headers: HeaderMap,
    Id(user_id): Id,
    QueryParams(params): QueryParams<ListParams>,
) -> ApiResult<Response> {
    Ok(caching::json(&headers, &**posts_of(&state, &user_id, &params, OwnerKnown::No).await?))
}
