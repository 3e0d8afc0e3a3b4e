//! What every request passes on its way in and out, once, around its route:
//!
//! 1. **Admission.** An API write's caller is known from the request's head before a byte of
//!    its body is read: one that names none is answered 401 at once. No body is read for a
//!    read, nor for a route that does not exist. Then the whole body is read, at
//!    [`body::MIN_RATE`] or faster, and only then is a place taken. A client that trickles its
//!    body holds its own connection, never a place, and is cut when it falls behind. A
//!    picture's body is the route's to read, after it has checked who sends it and where it
//!    goes, within the upload buffers ([`body`]). So a client that is not signed in never holds
//!    a place, an upload's share or a decode. What it can hold is its own connection, and a
//!    page form's body of at most [`MAX_BODY_BYTES`]. That body is read so that a writer whose
//!    sign-in ended gets their text back with the 401. Past `max_in_flight` places a request is
//!    answered 503 at once instead of queued without bound (the host and clients retry; the
//!    instance stays healthy). Reads and writes have places of their own, so that a flood of
//!    one kind cannot starve the other.
//! 2. **The page request.** Who is signed in and the page's address, read once for a page
//!    ([`PageRequest`]), so that error pages rendered where no handler asked still show them.
//! 3. **Compression**, gzip or brotli, for a client that accepts it (browsers do): pages and
//!    JSON lists are repetitive text. The body is compressed as it is sent.
//! 4. **On the way out,** the answer gets the security headers
//!    ([`pages::add_security_headers`]) and what a shared cache may keep
//!    ([`caching::cache_control`]). A shared cache may keep nothing of a signed-in or
//!    cookie-bearing request's answer, nor of one that sets a cookie. The request's Cosmos cost
//!    goes in headers: `x-ms-request-charge` (RU), `x-cosmos-operations` (database round trips)
//!    and `x-cosmos-queries` (how many of them were queries; absent when there were none at
//!    all). A fourth, `x-cosmos-partitions`, names the logical partitions they touched, per
//!    container (`users=1, posts=1`; `posts=*` for a query across all partitions; absent when
//!    none). Last, one log line is written.
//!
//! One hand-written layer rather than one `from_fn` layer per concern. Each such layer boxes a
//! future and clones the route it wraps on every request. With five of them, the layers cost
//! the front page more than its own handler did (BENCHMARKS.md, "The front page against
//! nginx"). Compression is here so that it runs only for a request that accepts an encoding. As
//! a router layer of its own it ran for every request, and cost one that accepts none 8 % of
//! the front page's throughput (BENCHMARKS.md, "what each part costs").

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{MatchedPath, Request};
use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::{Layer, Service, ServiceExt};
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{DefaultPredicate, Predicate};

use super::body::{self, Deadline, PictureBody, UploadBuffers};
use super::caching;
use super::error::ApiError;
use super::pages::{self, PageRequest};
use super::{HOST_BATCH_BYTES, HttpFunction, MAX_BODY_BYTES, MAX_UPLOAD_BYTES, Serving};
use crate::changefeed;
use crate::config::{AuthMode, PublicUrl};
use crate::cosmos::Meter;
use request_log::{Answered, Correlation, Hundredths, Tenths};
pub(crate) use request_log::{OWN_LINES_PER_MINUTE, RequestLog};

/// The layer: `router.layer(FrontDoor::new(...))`. A layer on a router is applied to each
/// route, so what must be counted across routes (the places) lives behind one `Arc`.
#[derive(Clone)]
pub(crate) struct FrontDoor(Arc<Door>);

struct Door {
    reads: Arc<Semaphore>,
    writes: Arc<Semaphore>,
    /// Whether the change-feed routes exist (under the host), and with them their larger bodies.
    host_batches: bool,
    /// How long a request may take in all (the change-feed batches excepted: the host's own
    /// function timeout bounds them).
    request_timeout: Duration,
    auth: AuthMode,
    /// The bytes the pictures' bodies may hold at once.
    uploads: Arc<UploadBuffers>,
    /// The blog's address, for the pages' links.
    public_url: PublicUrl,
    /// This instance's requests, counted for the log.
    requests: Arc<RequestLog>,
}

impl FrontDoor {
    pub(super) fn new(serving: Serving, auth: AuthMode) -> FrontDoor {
        let Serving {
            max_in_flight,
            request_timeout,
            host_change_feed,
            uploads,
            public_url,
            requests,
        } = serving;
        FrontDoor(Arc::new(Door {
            reads: Arc::new(Semaphore::new(max_in_flight)),
            writes: Arc::new(Semaphore::new(max_in_flight)),
            host_batches: host_change_feed,
            request_timeout,
            auth,
            uploads: Arc::new(uploads),
            public_url,
            requests,
        }))
    }
}

impl<S> Layer<S> for FrontDoor {
    type Service = Entrance<S>;

    fn layer(&self, route: S) -> Entrance<S> {
        Entrance { door: self.0.clone(), route }
    }
}

/// One route behind the [`FrontDoor`].
#[derive(Clone)]
pub(crate) struct Entrance<S> {
    door: Arc<Door>,
    route: S,
}

impl<S> Service<Request> for Entrance<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.route.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> <Self as Service<Request>>::Future {
        // The route that was polled ready answers this request; a clone waits for the next.
        let next = self.route.clone();
        let ready = std::mem::replace(&mut self.route, next);
        let door = self.door.clone();
        Box::pin(async move { Ok(door.pass(request, ready).await) })
    }
}

impl Door {
    async fn pass<S>(&self, request: Request, route: S) -> Response
    where
        S: Service<Request, Response = Response, Error = Infallible>,
    {
        let started = Instant::now();
        let method = request.method().clone();
        // The log names the route as declared (`/posts/{postId}`), or the path where none matched.
        let matched = request.extensions().get::<MatchedPath>().cloned();
        let unmatched = matched.is_none().then(|| request.uri().path().to_owned());
        let correlation = Correlation::of(request.headers());
        let personal = caching::is_personal(request.headers());
        let meter = Arc::new(Meter::default());
        // A route that panics is answered 500, as any other failure, instead of the connection
        // being dropped with no answer (the client sees a reset, the log no line for it).
        let admitted = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(
            self.admit(request, route),
        ));
        let mut response = meter
            .clone()
            .measure(admitted)
            .await
            .unwrap_or_else(|panic| answer_to_a_panic(&*panic));
        pages::add_security_headers(response.headers_mut());
        caching::cache_control(personal, &mut response);
        let requested = Requested {
            method: &method,
            route: matched.as_ref().map(MatchedPath::as_str),
            path: unmatched.as_deref().unwrap_or_default(),
            started,
            correlation: &correlation,
        };
        log_and_show_cost(&mut response, &meter, &self.requests, requested);
        response
    }

    /// Reads the body (but a picture's), takes a place, and runs the route, with the page
    /// request current.
    async fn admit<S>(&self, request: Request, route: S) -> Response
    where
        S: Service<Request, Response = Response, Error = Infallible>,
    {
        let (mut parts, body) = request.into_parts();
        // Only a write's function matters here (a read's body is never read): a read does not
        // look it up.
        let function = if parts.method.is_safe() {
            None
        } else {
            parts
                .extensions
                .get::<MatchedPath>()
                .and_then(|matched| HttpFunction::of(&parts.method, matched.as_str()))
        };
        if let Some(refusal) = self.unknown_writer(&parts, function) {
            return refusal;
        }
        let takes_picture = self.takes_picture(&parts);
        let body = if takes_picture {
            // Read by the route once it knows where it goes, within the upload buffers; only an
            // upload declared too large is refused here, before a byte of it is read.
            if declared_length(&parts).is_some_and(|length| length > MAX_UPLOAD_BYTES as u64) {
                return too_large(MAX_UPLOAD_BYTES);
            }
            body
        } else if self.is_host_invocation(&parts) || function.is_some() {
            match self.read_body(&parts, body).await {
                Ok(body) => body,
                Err(refusal) => return refusal,
            }
        } else {
            // A read, or a request no function answers (404, 405): nothing in its body is used,
            // so none of it is waited for or held.
            Body::empty()
        };
        let Some(_place) = self.place_for(&parts.method) else {
            return ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "The handler is at its limit of requests in flight; retry in a moment.",
            )
            .into_response();
        };
        let page = PageRequest::of(&parts, self.auth, &self.public_url);
        // A picture's route reads its body itself: its budget restarts once the body is in.
        let deadline = (!self.is_host_invocation(&parts)).then(|| {
            let first = if takes_picture {
                body::allowance(MAX_UPLOAD_BYTES as u64)
            } else {
                Duration::ZERO
            };
            Deadline::new(self.request_timeout, first)
        });
        if let (true, Some(deadline)) = (takes_picture, &deadline) {
            parts
                .extensions
                .insert(PictureBody { buffers: self.uploads.clone(), deadline: deadline.clone() });
        }
        let answer = within(
            deadline,
            self.request_timeout,
            page.is_some(),
            compressed_as_accepted(route, Request::from_parts(parts, body)),
        );
        match page {
            Some(page) => page.scope(answer).await,
            None => answer.await,
        }
    }

    /// The answer to an API write whose head names no caller: 401 (or 403 for an identity that
    /// cannot be a user's), as the route itself would answer, before its body is read. An
    /// answer of `None` lets the request in. The `function` argument is a write's (`None` for a
    /// read). The pages' forms check their viewer in their routes (see
    /// [`pages::FormWithPicture`]).
    fn unknown_writer(&self, parts: &Parts, function: Option<HttpFunction>) -> Option<Response> {
        function.filter(|function| super::is_api_route(function.route()))?;
        super::auth::principal(parts, self.auth).err().map(IntoResponse::into_response)
    }

    /// Whether the request is the Functions host invoking a function of its own triggers: a
    /// change-feed batch, or the timer's run.
    fn is_host_invocation(&self, parts: &Parts) -> bool {
        let name = parts.uri.path().strip_prefix('/');
        self.host_batches
            && parts.method == Method::POST
            && (changefeed::Function::ALL.iter().any(|function| name == Some(function.name()))
                || name == Some(crate::app::scheduled::TIMER_FUNCTION))
    }

    /// The whole body, at [`body::MIN_RATE`] or faster and within the route's limit; otherwise
    /// the answer that says which was exceeded. A request without a body (every GET a browser
    /// sends) has nothing to wait for: no timer.
    async fn read_body(&self, parts: &Parts, body: Body) -> Result<Body, Response> {
        if body.is_end_stream() {
            return Ok(Body::from(Bytes::new()));
        }
        let limit = self.body_limit(parts);
        let declared = declared_length(parts);
        if declared.is_some_and(|length| length > limit as u64) {
            // Refused before a byte of it is read.
            return Err(too_large(limit));
        }
        match body::read_at_rate(body, limit, declared.unwrap_or(0) as usize).await {
            Ok(bytes) => Ok(Body::from(bytes)),
            Err(error) => Err(error.into_api_error(|| too_large_error(limit)).into_response()),
        }
    }

    /// Whether the request goes to a route that takes a picture.
    fn takes_picture(&self, parts: &Parts) -> bool {
        let route = parts.extensions.get::<MatchedPath>().map(MatchedPath::as_str);
        route.is_some_and(|route| PICTURE_ROUTES.iter().any(|taking| taking == route))
    }

    /// The most bytes the request's body may have: a change-feed batch's, a picture's, or any
    /// other request's.
    fn body_limit(&self, parts: &Parts) -> usize {
        if self.is_host_invocation(parts) {
            HOST_BATCH_BYTES
        } else if self.takes_picture(parts) {
            MAX_UPLOAD_BYTES
        } else {
            MAX_BODY_BYTES
        }
    }

    /// A place among the reads' or the writes', if one is free.
    fn place_for(&self, method: &Method) -> Option<OwnedSemaphorePermit> {
        let places =
            if matches!(*method, Method::GET | Method::HEAD) { &self.reads } else { &self.writes };
        places.clone().try_acquire_owned().ok()
    }
}

/// The routes that take a picture, as the router matches them: the API's upload, and the
/// post's forms.
static PICTURE_ROUTES: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
    super::HttpFunction::TAKING_PICTURES
        .iter()
        .map(|function| super::router_path(function.route()))
        .collect()
});

/// The body's declared length (`Content-Length`), if it declares one.
fn declared_length(parts: &Parts) -> Option<u64> {
    parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|length| length.to_str().ok()?.parse::<u64>().ok())
}

/// 413, saying how much is taken.
fn too_large(limit: usize) -> Response {
    too_large_error(limit).into_response()
}

/// The problem of a body over `limit`.
pub(crate) fn too_large_error(limit: usize) -> ApiError {
    let detail = if limit == MAX_UPLOAD_BYTES {
        "The upload is over 10 MiB, the largest picture taken; nothing was stored. Send a smaller picture (a phone's photo \
         at its usual size fits)."
            .to_owned()
    } else {
        format!("The request body is over {limit} bytes.")
    };
    ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, detail)
}

/// The route's answer, or, past `budget`, 503 with `Retry-After` (an HTML page for a page): a
/// slow database never holds a request without an answer. The route is dropped where it was; a
/// write it had sent may be made (the embedded store commits what its emulator applied,
/// `Store::durably`), which is what the answer says, and why writes carry an Idempotency-Key.
async fn within(
    deadline: Option<Deadline>,
    budget: Duration,
    page: bool,
    answer: impl Future<Output = Response>,
) -> Response {
    let Some(deadline) = deadline else { return answer.await };
    let mut answer = std::pin::pin!(answer);
    let mut at = deadline.watch();
    // Until the deadline, which moves when a picture's body is in (and its budget restarts).
    let timed_out = loop {
        let until = *at.borrow_and_update();
        tokio::select! {
            response = answer.as_mut() => break Ok(response),
            () = tokio::time::sleep_until(until) => break Err(()),
            Ok(()) = at.changed() => {}
        }
    };
    match timed_out {
        Ok(response) => response,
        Err(()) => {
            tracing::warn!(budget_s = budget.as_secs(), "a request ran out of time");
            let seconds = budget.as_secs();
            let detail = if page {
                format!(
                    "The blog did not answer within {seconds} s. Reload in a moment; a form you sent may have been \
                     saved, and sent again from its page it is saved once."
                )
            } else {
                format!(
                    "The database did not answer within {seconds} s. Retry in a moment; a write may have been made, \
                     so send it again with the same Idempotency-Key."
                )
            };
            let error = ApiError::come_back_after(
                StatusCode::SERVICE_UNAVAILABLE,
                detail,
                Duration::from_secs(1),
            );
            if page { pages::PageError(error).into_response() } else { error.into_response() }
        }
    }
}

/// The 500 for a route that panicked, with the panic's message in the log (the default panic
/// hook has printed it with its place already).
fn answer_to_a_panic(panic: &(dyn std::any::Any + Send)) -> Response {
    let message = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message");
    ApiError::internal(format!("the route panicked: {message}")).into_response()
}

/// The route's answer, compressed when the request accepts an encoding that fits the answer. An
/// answer that could have been compressed says `Vary: Accept-Encoding` either way, so that a
/// shared cache does not hand a compressed answer to a client that cannot read it. Without
/// `Accept-Encoding`, the `Vary` is added on the same condition as tower-http's compression
/// adds it (`ResponseFuture::poll` in its `src/compression/future.rs`).
async fn compressed_as_accepted<S>(route: S, request: Request) -> Response
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    if request.headers().contains_key(header::ACCEPT_ENCODING) {
        let compress = CompressionLayer::new().layer(route);
        let response = compress.oneshot(request).await.unwrap_or_else(|never| match never {});
        return response.map(Body::new);
    }
    let mut response = route.oneshot(request).await.unwrap_or_else(|never| match never {});
    let headers = response.headers();
    let compressible = !headers.contains_key(header::CONTENT_ENCODING)
        && !headers.contains_key(header::CONTENT_RANGE)
        && DefaultPredicate::new().should_compress(&response);
    let accept_encoding = header::ACCEPT_ENCODING.as_str().as_bytes();
    let said = headers.get_all(header::VARY).iter().any(|vary| {
        vary.as_bytes()
            .windows(accept_encoding.len())
            .any(|name| name.eq_ignore_ascii_case(accept_encoding))
    });
    if compressible && !said {
        response.headers_mut().append(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    response
}

const REQUEST_CHARGE: HeaderName = HeaderName::from_static("x-ms-request-charge");
const OPERATIONS: HeaderName = HeaderName::from_static("x-cosmos-operations");
const PARTITIONS: HeaderName = HeaderName::from_static("x-cosmos-partitions");
const QUERIES: HeaderName = HeaderName::from_static("x-cosmos-queries");

/// The Cosmos cost headers, and the request counted in the log.
fn log_and_show_cost(
    response: &mut Response,
    meter: &Meter,
    requests: &RequestLog,
    request: Requested<'_>,
) {
    let (charge, operations) = meter.totals();
    let charge = Hundredths((charge * 100.0).round() as u64);
    let headers = response.headers_mut();
    // Most page views touch no store (the caches answer them): nothing to format for those.
    if operations == 0 {
        headers.insert(REQUEST_CHARGE, HeaderValue::from_static("0.00"));
        headers.insert(OPERATIONS, HeaderValue::from_static("0"));
    } else {
        headers.insert(
            REQUEST_CHARGE,
            HeaderValue::from_str(&charge.to_string()).expect("a number is a header value"),
        );
        headers.insert(OPERATIONS, HeaderValue::from(operations));
        headers.insert(QUERIES, HeaderValue::from(meter.queries()));
    }
    let partitions = if operations == 0 { String::new() } else { meter.partitions().to_string() };
    if !partitions.is_empty() {
        headers.insert(
            PARTITIONS,
            HeaderValue::from_str(&partitions).expect("container names are header values"),
        );
    }
    let latency =
        Tenths(u64::try_from(request.started.elapsed().as_micros() / 100).unwrap_or(u64::MAX));
    requests.log(&Answered {
        method: request.method,
        route: request.route,
        path: request.path,
        status: response.status().as_u16(),
        charge,
        operations,
        partitions: &partitions,
        latency,
        correlation: request.correlation,
    });
}

/// A request as it came in: what its log line says of it besides the answer.
struct Requested<'a> {
    method: &'a Method,
    /// The route as declared, where one matched.
    route: Option<&'a str>,
    /// The path, where none did.
    path: &'a str,
    started: Instant,
    correlation: &'a Correlation,
}

mod request_log;

#[cfg(test)]
mod tests;
