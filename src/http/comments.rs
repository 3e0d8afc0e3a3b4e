//! C3 (comment on a post), C6 (delete a comment) and Q4 (a post's comments).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

use super::AppState;
use super::auth::Caller;
use super::extract::{Id, Ids, JsonBody, QueryParams, validate_id, validate_text};
use super::lists::OwnerKnown;
use super::lists::{DEFAULT_PAGE_SIZE, ListPage, ListParams, wrap_token};
use super::posts::{existing_author, list_of_post, post_not_found};
use crate::cosmos::queries;
use crate::error::{ApiError, ApiResult, DeleteProblems, PROBLEM, ProblemDetails, ReadProblems, WriteProblems};
use crate::model::{self, Comment, MAX_COMMENT_CHARS};
use crate::scripts::{CounterOutcome, DeleteOutcome, StoredProcedure};

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewCommentBody {
    #[schema(min_length = 1, max_length = 255, pattern = "^(?!\\.{1,2}$)[!\"$&-.0->@-\\[\\]-~]+$")]
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
    tag = "posts",
    request_body = NewCommentBody,
    params(("postId" = String, Path, description = "The post's id", max_length = 255, pattern = "^(?!\\.{1,2}$)[!\"$&-.0->@-\\[\\]-~]+$")),
    responses(
        (status = 201, description = "C3: the comment, created and counted", body = Comment),
        (status = 404, description = "No such post", body = ProblemDetails, content_type = PROBLEM),
        (status = 422, description = "No such user", body = ProblemDetails, content_type = PROBLEM),
        WriteProblems,
    ),
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Id(post_id): Id,
    JsonBody(body): JsonBody<NewCommentBody>,
) -> ApiResult<(StatusCode, Json<Comment>)> {
    let created = create_comment(&state, &caller, &post_id, &body.user_id, body.content).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// C3, for the API and the pages.
pub async fn create_comment(
    state: &AppState,
    caller: &Caller,
    post_id: &str,
    user_id: &str,
    content: String,
) -> ApiResult<Comment> {
    validate_id(user_id).map_err(|why| ApiError::bad_request(format!("`userId` is not valid: {why}")))?;
    caller.must_be(user_id, "comment as this user")?;
    validate_text("content", &content, MAX_COMMENT_CHARS, true)?;
    let author = existing_author(state, user_id).await?;
    let comment = model::new_comment(model::new_id(), post_id, &author, content, model::now());
    let body = state.scripts.execute(StoredProcedure::CreateComment, post_id, (post_id, &comment)).await?;
    match CounterOutcome::<Comment>::from_body(body)? {
        CounterOutcome::Created(created) => Ok(created),
        CounterOutcome::PostNotFound => Err(post_not_found(post_id)),
        CounterOutcome::AlreadyLiked => Err(ApiError::internal("createComment answered alreadyLiked")),
    }
}

/// C6: `DELETE /api/posts/{postId}/comments/{commentId}`, by the comment's author or the post's
/// author (who moderates the comments under their post). The stored procedure `deleteComment`
/// checks who may, deletes the comment and decrements `commentCount`, in one transaction.
#[utoipa::path(
    delete,
    path = "/api/posts/{postId}/comments/{commentId}",
    tag = "posts",
    params(
        ("postId" = String, Path, description = "The post's id", max_length = 255, pattern = "^(?!\\.{1,2}$)[!\"$&-.0->@-\\[\\]-~]+$"),
        ("commentId" = String, Path, description = "The comment's id", max_length = 255, pattern = "^(?!\\.{1,2}$)[!\"$&-.0->@-\\[\\]-~]+$"),
    ),
    responses(
        (status = 204, description = "C6: the comment, deleted and uncounted"),
        (status = 404, description = "No such post, or no such comment on it", body = ProblemDetails, content_type = PROBLEM),
        DeleteProblems,
    ),
)]
pub async fn delete(State(state): State<AppState>, caller: Caller, Ids(post_id, comment_id): Ids) -> ApiResult<StatusCode> {
    delete_comment(&state, &caller, &post_id, &comment_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// C6, for the API and the pages.
pub async fn delete_comment(state: &AppState, caller: &Caller, post_id: &str, comment_id: &str) -> ApiResult<()> {
    let body = state.scripts.execute(StoredProcedure::DeleteComment, post_id, (post_id, comment_id, &caller.0)).await?;
    match DeleteOutcome::from_body(body)? {
        DeleteOutcome::Deleted { .. } => Ok(()),
        DeleteOutcome::PostNotFound => Err(post_not_found(post_id)),
        DeleteOutcome::CommentNotFound => {
            Err(ApiError::not_found(format!("There is no comment with id {comment_id:?} on post {post_id:?}.")))
        }
        DeleteOutcome::Forbidden { author } => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "Only the comment's author ({}) or the post's author may delete it; you are signed in as {:?}.",
                author.map_or_else(|| "unknown".to_owned(), |author| format!("{author:?}")),
                caller.0
            ),
        )),
        other => Err(ApiError::internal(format!("deleteComment answered {other:?}"))),
    }
}

/// Q4: `GET /api/posts/{postId}/comments`, oldest first: one query on the post's partition.
#[utoipa::path(
    get,
    path = "/api/posts/{postId}/comments",
    tag = "posts",
    params(("postId" = String, Path, description = "The post's id", max_length = 255, pattern = "^(?!\\.{1,2}$)[!\"$&-.0->@-\\[\\]-~]+$"), ListParams),
    responses(
        (status = 200, description = "Q4: the post's comments, oldest first", body = ListPage<Comment>),
        (status = 404, description = "No such post", body = ProblemDetails, content_type = PROBLEM),
        ReadProblems,
    ),
)]
pub async fn list(
    State(state): State<AppState>,
    Id(post_id): Id,
    QueryParams(params): QueryParams<ListParams>,
) -> ApiResult<Json<ListPage<Comment>>> {
    comments_of(&state, &post_id, &params, OwnerKnown::No).await.map(Json)
}

/// Q4, for the API and the pages.
pub async fn comments_of(
    state: &AppState,
    post_id: &str,
    params: &ListParams,
    known: OwnerKnown,
) -> ApiResult<ListPage<Comment>> {
    const LIST: &str = "comments";
    let page = params.page_request(&state.tokens, LIST, post_id, DEFAULT_PAGE_SIZE)?;
    let found = list_of_post::<Comment>(state, post_id, queries::post_comments(), page, known).await?;
    Ok(ListPage { items: found.items, continuation_token: wrap_token(&state.tokens, found.continuation, LIST, post_id) })
}
