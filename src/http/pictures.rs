//! Pictures in posts: the upload (`POST /api/posts/{postId}/pictures`) and the pictures
//! themselves (`GET /pictures/{owner}/{post}/{name}`), served without the database.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::body::UnreadBody;
use super::error::{ApiResult, PROBLEM, ProblemDetails, WriteProblems};
use super::extract::{Id, QueryParams};
use crate::app::pictures::{
    AddedPicture, PictureBytes, PictureTarget, add_picture, destination, picture,
};
use crate::app::{AppState, Caller, Missing};
use crate::model::picture::{PictureAddress, SMALL_SIZES};
use crate::pictures::IMMUTABLE;

/// The largest upload the upload's route reads: the largest picture taken
/// ([`crate::pictures::Limits::max_bytes`]), and room for a form's other fields around it.
pub(crate) const MAX_UPLOAD_BYTES: usize = 10 * 1024 * 1024 + 64 * 1024;

/// A picture's own Content-Security-Policy: opened by itself, it is a picture and nothing else
/// (no script, no style, no frame around it), whatever a browser would make of its bytes.
const PICTURE_POLICY: &str = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox; frame-ancestors 'self'";

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct UploadParams {
    /// The picture's alt text, for the Markdown answered (what a screen reader reads out;
    /// at most 300 characters, one line).
    #[param(max_length = 300)]
    alt: Option<String>,
}

/// A picture, added.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct AddedPictureBody {
    /// Where it is served, on this blog.
    url: String,
    /// `![alt](url)`: paste it into the post's content (C2 edit).
    markdown: String,
    /// Its media type as stored (a WebP is stored as JPEG, or PNG where it is transparent).
    content_type: &'static str,
    /// Width, in pixels, upright.
    width: u32,
    /// Height, in pixels, upright.
    height: u32,
    /// Its size as stored.
    bytes: u64,
    /// The smaller JPEG for phones, where it is wider than 960 pixels.
    phone_url: Option<String>,
    /// The JPEG for wide screens (1,440 pixels wide), where it is wider than that.
    screen_url: Option<String>,
    /// The small copies the lists show (128 × 96 and, for dense screens, 256 × 192), cut to
    /// fill their box; none for an animation, or a picture smaller than the box.
    small_copies: Vec<SmallCopyBody>,
    /// How many pictures the writer keeps now, and may keep.
    pictures_kept: u64,
    /// The most pictures a writer may keep.
    pictures_allowed: u64,
    /// Their bytes now.
    bytes_kept: u64,
    /// The most bytes a writer may keep.
    bytes_allowed: u64,
}

/// A small copy of a picture, as the lists show it.
#[derive(Serialize, ToSchema)]
pub(super) struct SmallCopyBody {
    /// Where it is served, on this blog.
    url: String,
    /// Width, in pixels.
    width: u32,
    /// Height, in pixels.
    height: u32,
}

impl AddedPictureBody {
    fn of(added: AddedPicture, allowed: crate::app::pictures::Quota) -> AddedPictureBody {
        let (width, height) = added.address.name.size();
        AddedPictureBody {
            url: added.address.url(),
            markdown: added.markdown,
            content_type: added.kind.media_type(),
            width,
            height,
            bytes: added.bytes,
            phone_url: added.address.phone().map(|phone| phone.url()),
            screen_url: added.address.screen().map(|screen| screen.url()),
            small_copies: SMALL_SIZES
                .iter()
                .filter_map(|&size| added.address.small(size))
                .map(|small| {
                    let (width, height) = small.name.size();
                    SmallCopyBody { url: small.url(), width, height }
                })
                .collect(),
            pictures_kept: added.usage.pictures,
            pictures_allowed: allowed.pictures,
            bytes_kept: added.usage.bytes,
            bytes_allowed: allowed.bytes,
        }
    }
}

/// Adds a picture to a post: `POST /api/posts/{postId}/pictures`, the picture's bytes as the
/// body, by the post's writer only. JPEG, PNG, WebP or GIF, recognised by its bytes (a declared
/// `Content-Type` must agree, or be `application/octet-stream`); at most 10 MiB, 8,000 pixels a
/// side and 40 megapixels. It is stored without its metadata (EXIF, GPS), encoded anew; answered
/// with its address and the Markdown that shows it. The same picture added twice is stored once.
#[utoipa::path(
    post,
    path = "/api/posts/{postId}/pictures",
    operation_id = "uploadPicture",
    tag = "posts",
    request_body(content = Vec<u8>, description = "The picture's bytes", content_type = "application/octet-stream"),
    params(("postId" = String, Path, description = "The post's id"), UploadParams),
    responses(
        (status = 201, description = "The picture, stored; paste its Markdown into the post", body = AddedPictureBody),
        (status = 404, description = "No such post", body = ProblemDetails, content_type = PROBLEM),
        (status = 409, description = "The writer keeps as many pictures, or bytes of them, as a writer may", body = ProblemDetails, content_type = PROBLEM),
        (status = 422, description = "Larger than its header says, too many pixels or frames, or truncated or damaged", body = ProblemDetails, content_type = PROBLEM),
        (status = 501, description = "This blog has no picture store", body = ProblemDetails, content_type = PROBLEM),
        WriteProblems,
    ),
)]
pub(super) async fn upload(
    State(state): State<AppState>,
    caller: Caller,
    Id(post_id): Id,
    QueryParams(params): QueryParams<UploadParams>,
    headers: HeaderMap,
    body: UnreadBody,
) -> ApiResult<Response> {
    let declared = headers.get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok());
    let alt = params.alt.unwrap_or_default();
    // Who sends it and where it goes, before a byte of it is read.
    let destination = destination(&state, &caller, PictureTarget::Post(&post_id), &alt).await?;
    let upload = body.read(|| super::front_door::too_large_error(MAX_UPLOAD_BYTES)).await?;
    let added = add_picture(&state, &caller, destination, upload, declared).await?;
    let quota =
        state.pictures.as_ref().map(|pictures| pictures.quota()).expect("a picture was added");
    let location = added.address.url();
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(AddedPictureBody::of(added, quota)),
    )
        .into_response())
}

/// A picture: `GET /pictures/{owner}/{post}/{name}`. Reads the picture store only. Its name is
/// its content's hash, so the answer never changes: cached for a year by browsers and CDNs,
/// with the hash as its strong `ETag` (a revalidation is answered 304 without reading).
pub(super) async fn show(
    State(state): State<AppState>,
    Path((owner, post, name)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let Some(address) = PictureAddress::parse(&owner, &post, &name) else {
        return picture_not_found(&format!("/pictures/{owner}/{post}/{name}"));
    };
    let etag = format!("\"{}\"", address.name.hash());
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|tags| {
            tags.split(',').any(|tag| {
                tag.trim() == etag || tag.trim() == "*" || tag.trim() == format!("W/{etag}")
            })
        });
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        match picture(&state, &address).await {
            Ok(PictureBytes::InMemory(bytes)) => {
                let mut response = bytes.into_response();
                let kind = HeaderValue::from_static(address.name.kind().media_type());
                response.headers_mut().insert(header::CONTENT_TYPE, kind);
                response
            }
            Ok(PictureBytes::InPieces(pieces)) => {
                let length = HeaderValue::from(pieces.length());
                let pieces = futures::stream::unfold(pieces, |mut pieces| async move {
                    pieces.next().await.map(|piece| (piece, pieces))
                });
                let mut response = axum::body::Body::from_stream(pieces).into_response();
                // Hyper sends this length (the stream's own is unknown) and closes the
                // connection where the pieces end early or in an error: the answer is cut short.
                response.headers_mut().insert(header::CONTENT_LENGTH, length);
                let kind = HeaderValue::from_static(address.name.kind().media_type());
                response.headers_mut().insert(header::CONTENT_TYPE, kind);
                response
            }
            Err(crate::app::AppError::NotFound(Missing::Picture(_))) => {
                return picture_not_found(&address.url());
            }
            Err(error) => return super::pages::PageError(error.into()).into_response(),
        }
    };
    let headers = response.headers_mut();
    headers.insert(header::ETAG, HeaderValue::from_str(&etag).expect("a hash is a header value"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(IMMUTABLE));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(PICTURE_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// 404 for a picture: a page saying so (a person followed a link to it).
fn picture_not_found(path: &str) -> Response {
    let detail =
        format!("There is no picture at {path}: the post it was in may have been deleted.");
    super::pages::PageError(super::error::ApiError::not_found(detail)).into_response()
}
