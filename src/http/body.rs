//! Reading request bodies: at a minimum rate rather than within a fixed time, and, for a
//! picture, only once its sender may add it and within a budget of bytes held across requests.
//!
//! **A rate, not a time.** A body must keep arriving at [`MIN_RATE`] on average after a
//! [`GRACE`] for its first bytes. The time it may take grows with what it sends: a 10 MiB photo
//! over a phone's 1 Mbit/s link takes 80 s and is read. A client that trickles (a byte a
//! second) is cut as soon as it falls behind, whatever it claims to send. Each chunk is awaited
//! until the moment the bytes so far are due by, so the check costs one timer per chunk.
//!
//! **A picture's body is read last.** The front door reads every other body before the route
//! runs. A picture route gets an [`UnreadBody`] instead, and reads it after it has checked who
//! sends it and where it goes (401, 403 and 404 cost the blog no body). Its bytes are then held
//! under a permit of the [`UploadBuffers`]. The permit is taken for its declared length (or the
//! largest upload, where none is declared) before a byte is read. Past the budget the answer is
//! 503 with `Retry-After`, never a connection more buffering 10 MiB. The permit goes with the
//! bytes ([`bytes::Bytes::from_owner`]). So it is given back when the last holder of the
//! picture's bytes (the blocking task that decodes it) lets go, not when the request ends. The
//! request's time budget counts from when its body is in ([`Deadline`]).
//!
//! Where this holds: per process. On Azure the Functions host reads the whole request before it
//! forwards it to the handler (its own limits apply first), so the rate is the host's to keep
//! there; the budget holds for the handler either way.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::ApiError;

/// The slowest average rate a body is read at, after [`GRACE`]: 128 KiB/s, 1 Mbit/s.
pub(crate) const MIN_RATE: u64 = 128 * 1024;

/// How long a body's first bytes may take.
pub(crate) const GRACE: Duration = Duration::from_secs(10);

/// The longest a body of `bytes` bytes may take to arrive.
pub(crate) fn allowance(bytes: u64) -> Duration {
    GRACE + Duration::from_millis(bytes.saturating_mul(1000) / MIN_RATE)
}

/// Why a body was not read whole.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// More than the limit.
    TooLarge,
    /// It fell behind [`MIN_RATE`].
    TooSlow { received: u64 },
    /// The connection failed or closed.
    Unreadable(String),
}

/// The whole body, at most `limit` bytes, at [`MIN_RATE`] or faster.
pub(crate) async fn read_at_rate(
    mut body: Body,
    limit: usize,
    capacity: usize,
) -> Result<Vec<u8>, BodyError> {
    let started = tokio::time::Instant::now();
    let mut bytes = Vec::with_capacity(capacity.min(limit));
    loop {
        let due = started + allowance(bytes.len() as u64);
        let frame =
            match tokio::time::timeout_at(due, http_body_util::BodyExt::frame(&mut body)).await {
                Err(_) => return Err(BodyError::TooSlow { received: bytes.len() as u64 }),
                Ok(None) => return Ok(bytes),
                Ok(Some(Err(error))) => return Err(BodyError::Unreadable(error.to_string())),
                Ok(Some(Ok(frame))) => frame,
            };
        if let Ok(data) = frame.into_data() {
            if bytes.len() + data.len() > limit {
                return Err(BodyError::TooLarge);
            }
            bytes.extend_from_slice(&data);
        }
    }
}

impl BodyError {
    /// The answer: 413 saying `too_large`, 408 saying how slowly it came, or 400.
    pub(crate) fn into_api_error(self, too_large: impl FnOnce() -> ApiError) -> ApiError {
        match self {
            BodyError::TooLarge => too_large(),
            BodyError::TooSlow { received } => ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "The request body came slower than {} KiB/s after its first {} s ({received} bytes had come); nothing \
                     of it was used. Send it again over a faster connection.",
                    MIN_RATE / 1024,
                    GRACE.as_secs()
                ),
            ),
            BodyError::Unreadable(error) => {
                ApiError::bad_request(format!("The request body could not be read: {error}."))
            }
        }
    }
}

/// The bytes the pictures' bodies may hold at once, in all, with the largest one.
pub(crate) struct UploadBuffers {
    /// In KiB.
    permits: Arc<Semaphore>,
    /// The largest body.
    max_upload: usize,
    /// All of it, in bytes.
    total: u64,
}

impl UploadBuffers {
    /// 64 MiB: six 10 MiB photos being received at once, the seventh told to come back.
    pub(crate) const DEFAULT_BYTES: u64 = 64 * 1024 * 1024;

    /// Buffers of `total` bytes in all, for bodies of at most `max_upload` bytes each.
    pub(crate) fn new(total: u64, max_upload: usize) -> UploadBuffers {
        let kib = usize::try_from(total / 1024).unwrap_or(usize::MAX).min(Semaphore::MAX_PERMITS);
        UploadBuffers { permits: Arc::new(Semaphore::new(kib)), max_upload, total }
    }
}

/// When a request's time runs out. A picture's request counts its budget from when its body is
/// in ([`Deadline::restart`]). So a slow link's upload has its time to arrive (at [`MIN_RATE`])
/// and then the same time to be prepared as any other request. The front door waits for the
/// route until the deadline, and again while it has moved on.
#[derive(Clone, Debug)]
pub(crate) struct Deadline {
    at: Arc<tokio::sync::watch::Sender<tokio::time::Instant>>,
    budget: Duration,
}

impl Deadline {
    /// `budget` from now, plus `first` (the time a body may take before it restarts).
    pub(crate) fn new(budget: Duration, first: Duration) -> Deadline {
        let (at, _) = tokio::sync::watch::channel(tokio::time::Instant::now() + budget + first);
        Deadline { at: Arc::new(at), budget }
    }

    /// When it is, told again each time it moves.
    pub(crate) fn watch(&self) -> tokio::sync::watch::Receiver<tokio::time::Instant> {
        self.at.subscribe()
    }

    /// The budget counted again from now: the body is in.
    fn restart(&self) {
        self.at.send_replace(tokio::time::Instant::now() + self.budget);
    }
}

/// What a picture's route reads its body with, put in the request by the front door.
#[derive(Clone)]
pub(crate) struct PictureBody {
    pub buffers: Arc<UploadBuffers>,
    pub deadline: Deadline,
}

/// The body of a request to a picture route, not read yet: see the module's documentation.
pub(crate) struct UnreadBody {
    body: Body,
    declared: Option<u64>,
    reading: Option<PictureBody>,
}

impl<S: Send + Sync> FromRequest<S> for UnreadBody {
    type Rejection = std::convert::Infallible;

    async fn from_request(request: Request, _: &S) -> Result<Self, Self::Rejection> {
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|length| length.to_str().ok()?.parse::<u64>().ok());
        let reading = request.extensions().get::<PictureBody>().cloned();
        Ok(UnreadBody { body: request.into_body(), declared, reading })
    }
}

/// The bytes of the upload and the permit they hold their buffer under.
struct Held {
    bytes: Vec<u8>,
    _permit: Option<OwnedSemaphorePermit>,
}

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl UnreadBody {
    /// The body of a sender who is not signed in, on a picture's route: at most `limit` bytes,
    /// as any other form's, outside the upload buffers, which are only ever held for a known
    /// writer. Declared larger, it is refused before a byte of it is read (`too_large`).
    pub(crate) async fn read_outside_buffers(
        self,
        limit: usize,
        too_large: impl FnOnce() -> ApiError,
    ) -> Result<Bytes, ApiError> {
        if self.declared.is_some_and(|declared| declared > limit as u64) {
            return Err(too_large());
        }
        let bytes = read_at_rate(self.body, limit, 0)
            .await
            .map_err(|error| error.into_api_error(too_large))?;
        Ok(Bytes::from(bytes))
    }

    /// The body, read within the upload buffers and at [`MIN_RATE`]; the bytes answered hold
    /// their share of the buffers until they are dropped.
    pub(crate) async fn read(
        self,
        too_large: impl FnOnce() -> ApiError,
    ) -> Result<Bytes, ApiError> {
        let Some(PictureBody { buffers, deadline }) = self.reading else {
            // A route that takes no picture: the front door has read its body already, within
            // that route's limit.
            let bytes = read_at_rate(self.body, super::MAX_UPLOAD_BYTES, 0)
                .await
                .map_err(|error| error.into_api_error(too_large))?;
            return Ok(Bytes::from(bytes));
        };
        let limit = buffers.max_upload;
        let reserved = self.declared.map_or(limit as u64, |declared| declared.min(limit as u64));
        let kib = u32::try_from(reserved.div_ceil(1024).max(1)).unwrap_or(u32::MAX);
        let permit = buffers.permits.clone().try_acquire_many_owned(kib).map_err(|_| {
            ApiError::come_back_after(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "The blog is receiving as many pictures as it holds at once ({} MiB); nothing of this one was read. \
                     Send it again in a moment.",
                    buffers.total / (1024 * 1024)
                ),
                Duration::from_secs(2),
            )
        })?;
        // Past the declared length hyper stops the body itself; without one, past what was
        // reserved (the largest upload) it is too large.
        let bytes = read_at_rate(self.body, reserved as usize, reserved as usize)
            .await
            .map_err(|error| error.into_api_error(too_large))?;
        deadline.restart();
        Ok(Bytes::from_owner(Held { bytes, _permit: Some(permit) }))
    }
}
