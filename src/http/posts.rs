//! C2 (create, edit post), C7 (delete post) and Q2 (get post).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

use super::auth::Reader;
use super::caching;
use super::error::{
    ApiResult, DeleteProblems, PROBLEM, ProblemDetails, ReadProblems, WriteProblems,
};
use super::extract::{Id, JsonBody};
use crate::app::kept::api_post;
use crate::app::posts::{StatusAsked, create_post, delete_post, edit_post, set_preview_key};
use crate::app::{AppState, Caller};
use crate::model::{Post, PostStatus};

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct NewPostBody {
    #[schema(schema_with = super::extract::item_id)]
    user_id: String,
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]*[^\\s\\u0000-\\u001F\\u007F-\\u009F][^\\u0000-\\u001F\\u007F-\\u009F]*$"
    )]
    title: String,
    #[schema(
        min_length = 1,
        max_length = 20000,
        pattern = "^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F]*[^\\s\\u0000-\\u001F\\u007F-\\u009F][^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F]*$"
    )]
    content: String,
    /// The post's tags, as they are to be shown: at most 5, each 1 to 32 characters, no two the
    /// same ignoring case and Unicode form.
    #[serde(default)]
    #[schema(schema_with = tags_schema)]
    tags: Vec<String>,
    /// `published` (the default): readers see it at once; `draft`: its author alone reads it,
    /// and it is in no list but theirs of drafts until it is published; `scheduled`: a draft
    /// published at `publishAt`.
    #[serde(default)]
    status: Option<PostStatus>,
    /// When a scheduled post is published: RFC 3339 with its offset from UTC, in the future
    /// and at most 366 days ahead. With `status` `scheduled` only.
    #[serde(default)]
    #[schema(format = DateTime)]
    publish_at: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditPostBody {
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]*[^\\s\\u0000-\\u001F\\u007F-\\u009F][^\\u0000-\\u001F\\u007F-\\u009F]*$"
    )]
    title: String,
    #[schema(
        min_length = 1,
        max_length = 20000,
        pattern = "^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F]*[^\\s\\u0000-\\u001F\\u007F-\\u009F][^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F]*$"
    )]
    content: String,
    /// The post's tags from now on (absent: kept as they are; `[]`: none).
    #[serde(default)]
    #[schema(schema_with = tags_schema)]
    tags: Option<Vec<String>>,
    /// The post's status from now on (absent: kept as it is). A draft published is dated now;
    /// a post with comments or likes cannot go back to draft or be scheduled (409).
    #[serde(default)]
    status: Option<PostStatus>,
    /// With `status` `scheduled`: when it is published, as in C2 create.
    #[serde(default, rename = "publishAt")]
    #[schema(format = DateTime)]
    publish_at: Option<String>,
}

/// What a tag may hold: no control characters, bidirectional controls, `,` or `/`, and at least
/// one character that shows (not a space, nor one of the default-ignorable code points names are
/// compared without), as for a username.
const TAG_PATTERN: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F\\u202A-\\u202E\\u2066-\\u2069,/]*[^\\s\\u0000-\\u001F\\u007F-\\u009F\\u202A-\\u202E\\u2066-\\u2069,/\\u00AD\\u034F\\u061C\\u115F\\u1160\\u17B4\\u17B5\\u180B-\\u180F\\u200B-\\u200F\\u2060-\\u206F\\u3164\\uFE00-\\uFE0F\\uFEFF\\uFFA0\\uFFF0-\\uFFF8][^\\u0000-\\u001F\\u007F-\\u009F\\u202A-\\u202E\\u2066-\\u2069,/]*$";

/// A post's tags in a request: what `model::tags::valid_tags` takes.
fn tags_schema() -> utoipa::openapi::schema::Array {
    utoipa::openapi::schema::ArrayBuilder::new()
        .items(tag_schema())
        .max_items(Some(crate::model::tags::MAX_TAGS))
        .build()
}

/// One tag, in a request's body or in a path.
pub(super) fn tag_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(crate::model::tags::MAX_TAG_CHARS))
        .pattern(Some(TAG_PATTERN))
        .build()
}

/// C2 create: `POST /api/posts`. Reads the author once, to copy their username into the post
/// (the article's V2 step): Q2 then needs no second read. An unknown author is 422: the request
/// is well-formed but names a user that does not exist.
#[utoipa::path(
    post,
    path = "/api/posts",
    operation_id = "createPost",
    tag = "posts",
    request_body = NewPostBody,
    params(super::extract::IdempotencyKeyHeader),
    responses(
        (status = 201, description = "C2: the post, created", body = Post),
        (status = 404, description = "The Idempotency-Key's request was made before, and the post it wrote has been deleted since", body = ProblemDetails, content_type = PROBLEM),
        (status = 422, description = "No such user, or the Idempotency-Key was used for another request", body = ProblemDetails, content_type = PROBLEM),
        WriteProblems,
    ),
)]
pub(super) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<NewPostBody>,
) -> ApiResult<impl IntoResponse> {
    let post = create_post(
        &state,
        &caller,
        &body.user_id,
        body.title,
        body.content,
        body.tags,
        StatusAsked { status: body.status, publish_at: body.publish_at },
    )
    .await?;
    let location = format!("/api/posts/{}", post.id);
    Ok((StatusCode::CREATED, [(header::LOCATION, location)], Json(post)))
}

/// C2 edit: `PUT /api/posts/{postId}`. Read, change title and content, replace on the etag that
/// was read. A comment or like landing in between moves a counter, and the edit is redone on
/// the new version instead of writing the old count back.
#[utoipa::path(
    put,
    path = "/api/posts/{postId}",
    operation_id = "editPost",
    tag = "posts",
    request_body = EditPostBody,
    params(("postId" = String, Path, description = "The post's id"), super::extract::IdempotencyKeyHeader),
    responses(
        (status = 200, description = "C2: the post, edited", body = Post),
        (status = 404, description = "No such post", body = ProblemDetails, content_type = PROBLEM),
        (status = 422, description = "The Idempotency-Key was used for another request", body = ProblemDetails, content_type = PROBLEM),
        WriteProblems,
    ),
)]
pub(super) async fn edit(
    State(state): State<AppState>,
    caller: Caller,
    Id(post_id): Id,
    JsonBody(body): JsonBody<EditPostBody>,
) -> ApiResult<Json<Post>> {
    let EditPostBody { title, content, tags, status, publish_at } = body;
    let asked = StatusAsked { status, publish_at };
    Ok(Json(edit_post(&state, &caller, &post_id, title, content, tags, asked).await?))
}

/// C7: `DELETE /api/posts/{postId}`, by its author only. The stored procedure `deletePost`
/// makes the post a tombstone: every read then answers 404, and `PostsChangeFeed` removes its
/// copies from `users` and `feed`. Then it deletes the post's comments and likes in bounded
/// pieces, run after run. Cosmos DB's time to live removes the tombstone a day later.
#[utoipa::path(
    delete,
    path = "/api/posts/{postId}",
    operation_id = "deletePost",
    tag = "posts",
    params(("postId" = String, Path, description = "The post's id"), super::extract::IdempotencyKeyHeader),
    responses(
        (status = 204, description = "C7: the post, its comments and likes, deleted; its copies follow through the change feed"),
        (status = 404, description = "No such post", body = ProblemDetails, content_type = PROBLEM),
        DeleteProblems,
    ),
)]
pub(super) async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Id(post_id): Id,
) -> ApiResult<StatusCode> {
    delete_post(&state, &caller, &post_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A preview link, as its author is given it.
#[derive(serde::Serialize, ToSchema)]
pub(crate) struct PreviewLink {
    /// The preview's path on the blog: `/preview/{postId}/{key}`. Whoever has it reads the
    /// post as readers will, until it is revoked.
    path: String,
}

/// `POST /api/posts/{postId}/preview`: a link that shows the caller's unpublished post to
/// whoever has it, as readers will see it. Its key is random (122 bits), kept with the post and
/// in no copy; a new link revokes the one before.
#[utoipa::path(
    post,
    path = "/api/posts/{postId}/preview",
    operation_id = "sharePreview",
    tag = "posts",
    params(("postId" = String, Path, description = "The post's id")),
    responses(
        (status = 201, description = "The preview link, shared", body = PreviewLink),
        (status = 404, description = "No such post, or another user's draft", body = ProblemDetails, content_type = PROBLEM),
        (status = 409, description = "The post is published: its own address shares it", body = ProblemDetails, content_type = PROBLEM),
        WriteProblems,
    ),
)]
pub(super) async fn share_preview(
    State(state): State<AppState>,
    caller: Caller,
    Id(post_id): Id,
) -> ApiResult<impl IntoResponse> {
    let key = set_preview_key(&state, &caller, &post_id, true).await?.unwrap_or_default();
    let path = format!("/preview/{post_id}/{key}");
    let headers =
        [(header::LOCATION, path.clone()), (header::CACHE_CONTROL, "no-store".to_owned())];
    Ok((StatusCode::CREATED, headers, Json(PreviewLink { path })))
}

/// `DELETE /api/posts/{postId}/preview`: the preview link stops working.
#[utoipa::path(
    delete,
    path = "/api/posts/{postId}/preview",
    operation_id = "revokePreview",
    tag = "posts",
    params(("postId" = String, Path, description = "The post's id")),
    responses(
        (status = 204, description = "The preview link, revoked"),
        (status = 404, description = "No such post, or another user's draft", body = ProblemDetails, content_type = PROBLEM),
        DeleteProblems,
    ),
)]
pub(super) async fn revoke_preview(
    State(state): State<AppState>,
    caller: Caller,
    Id(post_id): Id,
) -> ApiResult<StatusCode> {
    set_preview_key(&state, &caller, &post_id, false).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Q2: `GET /api/posts/{postId}`: one point read returns the post with its author's username
/// and both counters, all kept on the post itself. It is kept by the instance for callers who
/// are not signed in, and checked by the change log (`app::kept::api_post`). A draft is its
/// author's alone: to anyone else it is not found, and to them it is answered private, never
/// kept by a shared cache.
#[utoipa::path(
    get,
    path = "/api/posts/{postId}",
    operation_id = "getPost",
    tag = "posts",
    params(("postId" = String, Path, description = "The post's id")),
    responses(
        (status = 200, description = "Q2: the post with its author's username and counters", body = Post),
        (status = 304, description = "Not modified since the ETag in If-None-Match"),
        (status = 404, description = "No such post", body = ProblemDetails, content_type = PROBLEM),
        ReadProblems,
    ),
)]
pub(super) async fn get(
    State(state): State<AppState>,
    headers: HeaderMap,
    Reader(reader): Reader,
    Id(post_id): Id,
) -> ApiResult<Response> {
    let read = api_post(&state, &post_id, caching::freshness(&headers), reader.as_deref()).await?;
    Ok(caching::json_for(&headers, &read.value, !read.value.status.is_published()))
}
