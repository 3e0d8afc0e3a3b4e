//! The one error type of the HTTP API, answered as RFC 9457 `application/problem+json`, and
//! the one place where what the use cases answer ([`AppError`]) becomes an HTTP status.

use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use serde::Serialize;
use utoipa::{IntoResponses, ToSchema};

use crate::app::AppError;
use crate::cosmos::StoreError;
use crate::logging::with_causes;
use crate::pictures::{PictureError, PictureStoreError};
use crate::scripts::ScriptError;

/// A failed request: the status, and a `detail` that tells the caller what to fix. Internal
/// failures keep their cause in the log and answer a generic detail, so nothing about the
/// deployment (endpoints, keys, stack traces) ever reaches a caller.
#[derive(Debug)]
pub struct ApiError {
    /// The answer's status.
    pub status: StatusCode,
    /// The problem's `detail`: what went wrong and what to do, in the caller's terms.
    pub detail: String,
    /// When to ask again, for `Retry-After` (`None`: a second, on a 503; nothing otherwise).
    pub retry_after: Option<Duration>,
}

impl ApiError {
    /// A problem with `status` and `detail`.
    pub(crate) fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        ApiError { status, detail: detail.into(), retry_after: None }
    }
    pub(crate) fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, detail)
    }
    pub(crate) fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, detail)
    }
    /// 409 Conflict.
    pub(crate) fn conflict(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, detail)
    }
    pub(crate) fn unprocessable(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, detail)
    }
    /// A problem with `status` and `detail` that asks the caller to come back after `wait`.
    pub(crate) fn come_back_after(
        status: StatusCode,
        detail: impl Into<String>,
        wait: Duration,
    ) -> Self {
        ApiError { retry_after: Some(wait), ..Self::new(status, detail) }
    }
    /// The `Retry-After` this answer carries: its own wait, else a second on a 503 (every 503
    /// here is a passing failure: the database busy or slow, too many writes to one post at
    /// once), else none.
    pub(crate) fn retry_after_header(&self) -> Option<HeaderValue> {
        match self.retry_after {
            Some(wait) => Some(HeaderValue::from(whole_seconds(wait))),
            None if self.status == StatusCode::SERVICE_UNAVAILABLE => {
                Some(HeaderValue::from_static("1"))
            }
            None => None,
        }
    }
    /// Logs `cause` and answers 500 without it.
    pub(crate) fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(%cause, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The server failed to complete the request; it has been logged.",
        )
    }
}

/// An error and each of its causes, joined by ": ", for the log.
struct Chain<'a>(&'a dyn std::error::Error);

impl std::fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(next) = cause {
            write!(f, ": {next}")?;
            cause = next.source();
        }
        Ok(())
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Throttled { retry_after } => {
                // As long as Cosmos DB asked (`x-ms-retry-after-ms`), when it said.
                let wait = retry_after.unwrap_or(Duration::from_secs(1));
                let detail = format!(
                    "The database is busy (request rate too large); retry in {} s.",
                    whole_seconds(wait)
                );
                Self::come_back_after(StatusCode::SERVICE_UNAVAILABLE, detail, wait)
            }
            StoreError::Timeout | StoreError::Unavailable(408) => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "The database did not answer in time; retry in a moment.",
            ),
            StoreError::Unavailable(_) => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "The database is unavailable for a moment; retry in a moment.",
            ),
            StoreError::DiskFull => Self::new(
                StatusCode::INSUFFICIENT_STORAGE,
                "The server's disk is full: nothing was written. Retry once space has been freed.",
            ),
            StoreError::BadContinuation(why) => {
                Self::bad_request(format!("continuationToken is not valid here: {why}"))
            }
            other => Self::internal(with_causes(&other)),
        }
    }
}

impl From<ScriptError> for ApiError {
    fn from(error: ScriptError) -> Self {
        match error {
            ScriptError::Store(error) => error.into(),
            ScriptError::Contention => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "Too many concurrent changes to this post; retry in a moment.",
            ),
            failed @ (ScriptError::Thrown(_)
            | ScriptError::InProgress(_)
            | ScriptError::Failed(_)) => Self::internal(with_causes(&failed)),
        }
    }
}

impl From<PictureError> for ApiError {
    fn from(error: PictureError) -> Self {
        let status = match error {
            PictureError::Empty => StatusCode::BAD_REQUEST,
            PictureError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            PictureError::NotAPicture(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            PictureError::TooManyPixels { .. }
            | PictureError::TooManyFrames { .. }
            | PictureError::OverMemory { .. }
            | PictureError::ColourProfileTooLarge { .. }
            | PictureError::Unreadable(_) => StatusCode::UNPROCESSABLE_ENTITY,
        };
        let mut detail = error.to_string();
        if let Some(first) = detail.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        Self::new(status, format!("{detail}. Nothing was stored."))
    }
}

impl From<PictureStoreError> for ApiError {
    fn from(error: PictureStoreError) -> Self {
        if error.is_disk_full() {
            return StoreError::DiskFull.into();
        }
        match error {
            PictureStoreError::Unavailable(cause) => {
                tracing::warn!(%cause, "the picture store is unavailable");
                Self::come_back_after(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "The picture store is unavailable for a moment: nothing was changed; retry in a moment.",
                    Duration::from_secs(5),
                )
            }
            other => Self::internal(with_causes(&other)),
        }
    }
}

impl From<AppError> for ApiError {
    fn from(error: AppError) -> Self {
        match error {
            AppError::Invalid(bad) => Self::bad_request(bad.to_string()),
            AppError::NotFound(missing) => Self::not_found(missing.to_string()),
            error @ (AppError::NoSuchWriter { .. } | AppError::KeyReused) => {
                Self::unprocessable(error.to_string())
            }
            AppError::Forbidden(not_allowed) => {
                Self::new(StatusCode::FORBIDDEN, not_allowed.to_string())
            }
            AppError::Conflict(clash) => Self::conflict(clash.to_string()),
            AppError::Busy(contended) => {
                Self::new(StatusCode::SERVICE_UNAVAILABLE, contended.to_string())
            }
            AppError::TooManyWrites { retry_after } => {
                let detail = format!(
                    "You have sent more writes than this blog accepts from one user in a short time; the next is \
                     accepted in {} s. Nothing of this one was written.",
                    whole_seconds(retry_after)
                );
                Self::come_back_after(StatusCode::TOO_MANY_REQUESTS, detail, retry_after)
            }
            error @ AppError::QuotaFull { .. } => Self::conflict(error.to_string()),
            error @ AppError::WrongMediaType { .. } => {
                Self::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, error.to_string())
            }
            AppError::PicturesBusy { retry_after } => Self::come_back_after(
                StatusCode::SERVICE_UNAVAILABLE,
                "Other pictures are being made ready with all the memory this blog gives them; nothing was stored. Send it \
                 again in a moment.",
                retry_after,
            ),
            // Logged, with the file, where it was found.
            AppError::DamagedPicture(url) => Self::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!(
                    "The picture at {url} is damaged in the blog's store; its operator can see which in the log."
                ),
            ),
            AppError::NoPictureStore => Self::new(
                StatusCode::NOT_IMPLEMENTED,
                "This blog keeps no pictures: its operator has not given it a picture store (BLOG_PICTURES, see docs/configuration.md).",
            ),
            AppError::Picture(error) => error.into(),
            AppError::PictureStore(error) => error.into(),
            error @ AppError::Unexpected { .. } => Self::internal(Chain(&error)),
            AppError::Store(error) => error.into(),
            AppError::Script(error) => error.into(),
        }
    }
}

/// The media type of every error answer.
pub(crate) const PROBLEM: &str = "application/problem+json";

/// The body of every error answer (RFC 9457).
#[derive(Serialize, ToSchema)]
pub(crate) struct ProblemDetails {
    /// Always `about:blank`: the status says what kind of problem it is.
    #[serde(rename = "type")]
    pub problem_type: &'static str,
    /// The problem's title, the status's reason phrase.
    pub title: &'static str,
    /// The HTTP status.
    pub status: u16,
    /// What went wrong, and what to change.
    pub detail: String,
}

/// The problems any write may be answered with, besides its own (for the OpenAPI description;
/// never built: the handlers answer [`ApiError`]).
#[allow(dead_code)]
#[derive(IntoResponses)]
pub(crate) enum WriteProblems {
    /// Malformed body, or an invalid field or id
    #[response(status = 400, content_type = "application/problem+json")]
    BadRequest(ProblemDetails),
    /// No signed-in caller
    #[response(status = 401, content_type = "application/problem+json")]
    Unauthorized(ProblemDetails),
    /// The caller does not own what the request writes
    #[response(status = 403, content_type = "application/problem+json")]
    Forbidden(ProblemDetails),
    /// Body over 256 KiB
    #[response(status = 413, content_type = "application/problem+json")]
    TooLarge(ProblemDetails),
    /// Body not JSON
    #[response(status = 415, content_type = "application/problem+json")]
    NotJson(ProblemDetails),
    /// The caller sent more writes than the blog accepts from one user in a short time; retry after `Retry-After` seconds
    #[response(status = 429, content_type = "application/problem+json")]
    TooManyWrites(ProblemDetails),
    /// Busy or throttled; retry
    #[response(status = 503, content_type = "application/problem+json")]
    Unavailable(ProblemDetails),
    /// The disk of the local embedded store is full: nothing was written
    #[response(status = 507, content_type = "application/problem+json")]
    DiskFull(ProblemDetails),
}

/// The problems any deletion may be answered with, besides its own (for the OpenAPI
/// description; never built).
#[allow(dead_code)]
#[derive(IntoResponses)]
pub(crate) enum DeleteProblems {
    /// An invalid id
    #[response(status = 400, content_type = "application/problem+json")]
    BadRequest(ProblemDetails),
    /// No signed-in caller
    #[response(status = 401, content_type = "application/problem+json")]
    Unauthorized(ProblemDetails),
    /// The caller may not delete it
    #[response(status = 403, content_type = "application/problem+json")]
    Forbidden(ProblemDetails),
    /// A request with the same Idempotency-Key is being made right now
    #[response(status = 409, content_type = "application/problem+json")]
    KeyInUse(ProblemDetails),
    /// The Idempotency-Key was used for another request
    #[response(status = 422, content_type = "application/problem+json")]
    KeyReused(ProblemDetails),
    /// The caller sent more writes than the blog accepts from one user in a short time; retry after `Retry-After` seconds
    #[response(status = 429, content_type = "application/problem+json")]
    TooManyWrites(ProblemDetails),
    /// Busy or throttled; retry
    #[response(status = 503, content_type = "application/problem+json")]
    Unavailable(ProblemDetails),
    /// The disk of the local embedded store is full: nothing was written
    #[response(status = 507, content_type = "application/problem+json")]
    DiskFull(ProblemDetails),
}

/// The problems any read may be answered with, besides its own (for the OpenAPI description).
#[allow(dead_code)]
#[derive(IntoResponses)]
pub(crate) enum ReadProblems {
    /// Invalid id, limit or continuationToken
    #[response(status = 400, content_type = "application/problem+json")]
    BadRequest(ProblemDetails),
    /// Busy or throttled; retry
    #[response(status = 503, content_type = "application/problem+json")]
    Unavailable(ProblemDetails),
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        // The client is told when to come back, as the front door's own 503 does.
        let retry_after = self.retry_after_header();
        let body = ProblemDetails {
            problem_type: "about:blank",
            title: self.status.canonical_reason().unwrap_or("Error"),
            status: self.status.as_u16(),
            detail: self.detail,
        };
        let body = serde_json::to_string(&body).expect("a problem serializes");
        let mut response = (self.status, body).into_response();
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM));
        if let Some(retry_after) = retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, retry_after);
        }
        response
    }
}

/// What an API handler returns.
pub type ApiResult<T> = Result<T, ApiError>;

/// `wait` in whole seconds, rounded up, at least one: what `Retry-After` can say.
fn whole_seconds(wait: Duration) -> u64 {
    wait.as_millis().div_ceil(1000).max(1) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An unexpected error keeps what caused it: the log line names both, and the caller is
    /// told only that the server failed.
    #[test]
    fn an_unexpected_errors_cause_reaches_the_log_line() {
        let cause = std::io::Error::other("the blocking task panicked");
        let error = AppError::unexpected_from("preparing a picture failed", cause);
        assert_eq!(
            Chain(&error).to_string(),
            "preparing a picture failed: the blocking task panicked"
        );
        let answer = ApiError::from(error);
        assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!answer.detail.contains("panicked"), "{}", answer.detail);
    }

    /// A full disk under the data directory's pictures is 507, as for every write; an
    /// unreachable Blob Storage is 503 with `Retry-After`; each bad upload its own status.
    #[test]
    fn picture_failures_are_answered_as_what_they_are() {
        let full = PictureStoreError::io(
            std::path::Path::new("data/pictures/w/p"),
            std::io::ErrorKind::StorageFull.into(),
        );
        let error = ApiError::from(full);
        assert_eq!(error.status.as_u16(), 507);
        assert!(error.detail.contains("nothing was written"), "{}", error.detail);
        let unreachable =
            ApiError::from(PictureStoreError::Unavailable("connection refused".into()));
        assert_eq!(
            (unreachable.status.as_u16(), unreachable.retry_after_header()),
            (503, Some(HeaderValue::from(5)))
        );
        assert!(!unreachable.detail.contains("connection refused"), "the cause stays in the log");
        for (bad, status) in [
            (PictureError::Empty, 400),
            (PictureError::TooLarge { bytes: 11, max: 10 }, 413),
            (PictureError::NotAPicture(Some("Bmp".into())), 415),
            (PictureError::Unreadable("truncated".into()), 422),
        ] {
            let error = ApiError::from(bad);
            assert_eq!(error.status.as_u16(), status, "{}", error.detail);
            assert!(error.detail.ends_with("Nothing was stored."), "{}", error.detail);
        }
    }

    #[test]
    fn a_full_disk_is_507_saying_nothing_was_written() {
        let error = ApiError::from(StoreError::DiskFull);
        assert_eq!(error.status.as_u16(), 507);
        assert!(
            error.detail.contains("disk is full") && error.detail.contains("nothing was written"),
            "{}",
            error.detail
        );
        let through_a_script =
            ApiError::from(crate::scripts::ScriptError::Store(StoreError::DiskFull));
        assert_eq!(through_a_script.status.as_u16(), 507);
    }

    /// The log line of a 500 names every cause, each once.
    #[test]
    fn an_internal_errors_log_names_every_cause_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("the connection was reset")]
        struct Transport(#[source] std::io::Error);
        let deepest = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "os error 104");
        let error = StoreError::Io {
            what: "cannot read the page".into(),
            source: std::io::Error::other(Transport(deepest)),
        };
        assert_eq!(
            with_causes(&error),
            "cannot read the page: the connection was reset: os error 104"
        );
    }

    /// Paging keeps a failure's kind: before, any database failure while a
    /// continuation token was in play became a 400 blaming the token, in the SDK's words, and a
    /// real 400 from the database on a token became a 500.
    #[test]
    fn a_failure_while_paging_keeps_its_kind_without_database_text() {
        use crate::cosmos::resuming_error;
        let refused = ApiError::from(resuming_error(StoreError::BadRequest(
            "Message: {\"Errors\":[\"Invalid Continuation Token\"]}, ActivityId: 1f2e".into(),
        )));
        assert_eq!(refused.status, StatusCode::BAD_REQUEST);
        assert!(
            refused.detail.starts_with("continuationToken is not valid here"),
            "{}",
            refused.detail
        );
        assert!(
            !refused.detail.contains("ActivityId") && !refused.detail.contains("Errors"),
            "{}",
            refused.detail
        );
        for passing in [
            StoreError::Throttled { retry_after: None },
            StoreError::Timeout,
            StoreError::Unavailable(503),
            StoreError::Unavailable(408),
        ] {
            let answer = ApiError::from(resuming_error(passing)).into_response();
            assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(answer.headers()[header::RETRY_AFTER], "1");
        }
        let failed = ApiError::from(resuming_error(StoreError::ProcedureUnfinished {
            procedure: "updateUsernames",
            post_id: "the-store's-own-words".into(),
        }));
        assert_eq!(failed.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!failed.detail.contains("own-words"), "{}", failed.detail);
    }
}
