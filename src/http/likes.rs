//! C4 (like a post), C5 (unlike it) and Q5 (a post's likes).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

use super::AppState;
use super::auth::Caller;
use super::extract::{Id, Ids, JsonBody, QueryParams, validate_id};
use super::lists::OwnerKnown;
use super::lists::{DEFAULT_PAGE_SIZE, ListPage, ListParams, wrap_token};
use super::posts::{existing_author, list_of_post, post_not_found};
use crate::cosmos::queries;
use crate::error::{ApiError, ApiResult, DeleteProblems, PROBLEM, ProblemDetails, ReadProblems, WriteProblems};
use crate::model::{self, Like};
use crate::scripts::{CounterOutcome, DeleteOutcome, StoredProcedure};

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewLikeBody {
    #[schema(min_length = 1, max_length = 255, pattern = "^(?!\\.{1,2}$)[!\"$&-.0->@-\\[\\]-~]+$")]
    user_id: String,
}

/// C4: `POST /api/posts/{postId}/likes`. The stored procedure `createLike` creates the like
/// and increments `likeCount` in one transaction; a user's second like on a post is 409 and
/// changes nothing (the like's id is derived from the user).
#[utoipa::path(
    post,
    path = "/api/posts/{postId}/likes",
    tag = "posts",
    request_body = NewLikeBody,
    params(("postId" = String, Path, description = "The post's id", max_length = 255, pattern = "^(?!\\.{1,2}$)[!\"$&-.0->@-\\[\\]-~]+$")),
    responses(
        (status = 201, description = "C4: the like, created and counted", body = Like),
        (status = 404, description = "No such post", body = ProblemDetails, content_type = PROBLEM),
        (status = 409, description = "This user already likes the post", body = ProblemDetails, content_type = PROBLEM),
        (status = 422, description = "No such user", body = ProblemDetails, content_type = PROBLEM),
        WriteProblems,
    ),
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Id(post_id): Id,
    JsonBody(body): JsonBody<NewLikeBody>,
) -> ApiResult<(StatusCode, Json<Like>)> {
    let created = create_like(&state, &caller, &post_id, &body.user_id).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// C4, for the API and the pages.
pub async fn create_like(state: &AppState, caller: &Caller, post_id: &str, user_id: &str) -> ApiResult<Like> {
    validate_id(user_id).map_err(|why| ApiError::bad_request(format!("`userId` is not valid: {why}")))?;
    caller.must_be(user_id, "like as this user")?;
    let author = existing_author(state, user_id).await?;
    let like = model::new_like(post_id, &author, model::now());
    let body = state.scripts.execute(StoredProcedure::CreateLike, post_id, (post_id, &like)).await?;
    match CounterOutcome::<Like>::from_body(body)? {
        CounterOutcome::Created(created) => Ok(created),
        CounterOutcome::PostNotFound => Err(post_not_found(post_id)),
        CounterOutcome::AlreadyLiked => Err(ApiError::conflict(format!(
            "User {:?} already likes post {post_id:?}; a post is liked once per user.",
            author.user_id
        ))),
    }
}

/// C5: `DELETE /api/posts/{postId}/likes/{userId}`, by the liker only. The stored procedure
/// `deleteLike` deletes the like and decrements `likeCount` in one transaction; a second unlike
/// is 404 and changes nothing.
#[utoipa::path(
    delete,
    path = "/api/posts/{postId}/likes/{userId}",
    tag = "posts",
    params(
        ("postId" = String, Path, description = "The post's id", max_length = 255, pattern = "^(?!\\.{1,2}$)[!\"$&-.0->@-\\[\\]-~]+$"),
        ("userId" = String, Path, description = "The liker's id", max_length = 255, pattern = "^(?!\\.{1,2}$)[!\"$&-.0->@-\\[\\]-~]+$"),
    ),
    responses(
        (status = 204, description = "C5: the like, deleted and uncounted"),
        (status = 404, description = "No such post, or the user does not like it", body = ProblemDetails, content_type = PROBLEM),
        DeleteProblems,
    ),
)]
pub async fn delete(State(state): State<AppState>, caller: Caller, Ids(post_id, user_id): Ids) -> ApiResult<StatusCode> {
    delete_like(&state, &caller, &post_id, &user_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// C5, for the API and the pages.
pub async fn delete_like(state: &AppState, caller: &Caller, post_id: &str, user_id: &str) -> ApiResult<()> {
    caller.must_be(user_id, "take back this like")?;
    let body = state.scripts.execute(StoredProcedure::DeleteLike, post_id, (post_id, user_id)).await?;
    match DeleteOutcome::from_body(body)? {
        DeleteOutcome::Deleted { .. } => Ok(()),
        DeleteOutcome::PostNotFound => Err(post_not_found(post_id)),
        DeleteOutcome::LikeNotFound => {
            Err(ApiError::not_found(format!("User {user_id:?} does not like post {post_id:?}; there is no like to take back.")))
        }
        other => Err(ApiError::internal(format!("deleteLike answered {other:?}"))),
    }
}

/// Q5: `GET /api/posts/{postId}/likes`, oldest first: one query on the post's partition.
#[utoipa::path(
    get,
    path = "/api/posts/{postId}/likes",
    tag = "posts",
    params(("postId" = String, Path, description = "The post's id", max_length = 255, pattern = "^(?!\\.{1,2}$)[!\"$&-.0->@-\\[\\]-~]+$"), ListParams),
    responses(
        (status = 200, description = "Q5: the post's likes, oldest first", body = ListPage<Like>),
        (status = 404, description = "No such post", body = ProblemDetails, content_type = PROBLEM),
        ReadProblems,
    ),
)]
pub async fn list(
    State(state): State<AppState>,
    Id(post_id): Id,
    QueryParams(params): QueryParams<ListParams>,
) -> ApiResult<Json<ListPage<Like>>> {
    likes_of(&state, &post_id, &params, OwnerKnown::No).await.map(Json)
}

/// Q5, for the API and the pages.
pub async fn likes_of(state: &AppState, post_id: &str, params: &ListParams, known: OwnerKnown) -> ApiResult<ListPage<Like>> {
    const LIST: &str = "likes";
    let page = params.page_request(&state.tokens, LIST, post_id, DEFAULT_PAGE_SIZE)?;
    let found = list_of_post::<Like>(state, post_id, queries::post_likes(), page, known).await?;
    Ok(ListPage { items: found.items, continuation_token: wrap_token(&state.tokens, found.continuation, LIST, post_id) })
}
