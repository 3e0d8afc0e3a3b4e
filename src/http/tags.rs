//! Q7 as `GET /api/tags/{tag}/posts`: the newest posts with a tag.

use axum::extract::{FromRequestParts, Path, State};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use axum::response::Response;

use super::caching;
use super::error::{ApiError, ApiResult, ReadProblems};
use super::extract::QueryParams;
use crate::app::AppState;
use crate::app::lists::{ListPage, ListParams};
use crate::app::tags::posts_with_tag;
use crate::model::Post;

/// The tag in a path, as given (percent-decoded); the use case checks and normalizes it.
pub(crate) struct TagInPath(pub String);

impl<S: Send + Sync> FromRequestParts<S> for TagInPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Path(tag) =
            Path::<String>::from_request_parts(parts, state).await.map_err(|rejection| {
                ApiError::bad_request(format!(
                    "The tag in the path is not valid: {}",
                    rejection.body_text()
                ))
            })?;
        Ok(TagInPath(tag))
    }
}

/// Q7: `GET /api/tags/{tag}/posts`, newest first: one query on the tag's partition of `tags`,
/// which holds a short copy of every post with the tag. The tag is compared ignoring case and
/// Unicode form; a tag nobody used is an empty list, not a 404.
#[utoipa::path(
    get,
    path = "/api/tags/{tag}/posts",
    operation_id = "listTagPosts",
    tag = "tags",
    params(("tag" = String, Path, description = "The tag, in any form: compared ignoring case and Unicode form"), ListParams),
    responses(
        (status = 200, description = "Q7: the short posts with the tag, newest first (none: an empty list)", body = ListPage<Post>),
        (status = 304, description = "Not modified since the ETag in If-None-Match"),
        ReadProblems,
    ),
)]
pub(crate) async fn list_posts(
    State(state): State<AppState>,
    headers: HeaderMap,
    TagInPath(tag): TagInPath,
    QueryParams(params): QueryParams<ListParams>,
) -> ApiResult<Response> {
    Ok(caching::json(&headers, &posts_with_tag(&state, &tag, &params).await?.page))
}
