//! The HTTP functions: one module per resource, a router that serves them at the paths the
//! Functions host forwards (`/api/...`), and the few extractors they share.
//!
//! Handlers stay thin: validate the input, apply a rule from [`crate::model`], make the one
//! Cosmos call the article's V3 model needs, answer.

pub mod auth;
mod comments;
mod extract;
mod feed;
mod likes;
pub mod lists;
mod observe;
pub mod openapi;
mod posts;
pub mod serve;
mod users;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post, put};
use tokio::sync::Semaphore;

use crate::changefeed;
use crate::config::AuthMode;
use crate::cosmos::Store;
use crate::error::ApiError;
use crate::scripts::ScriptExecutor;

pub use extract::{MAX_BODY_BYTES, validate_id};

/// The largest change-feed batch the host may deliver in one invocation.
pub const HOST_BATCH_BYTES: usize = 64 * 1024 * 1024;

/// What every handler shares: the store, and whoever runs the server-side scripts.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<Store>,
    pub scripts: Arc<dyn ScriptExecutor>,
    pub auth: AuthMode,
    /// Signs and checks the lists' continuation tokens.
    pub tokens: lists::TokenKey,
}

/// The HTTP functions: name (the folder under `functions/`), method, and route under the
/// host's `api` prefix. The router is built from this table, and a test checks it against every
/// `functions/*/function.json`, so the two cannot drift apart.
pub const HTTP_FUNCTIONS: [(&str, &str, &str); 13] = [
    ("CreateUser", "POST", "users"),
    ("EditUser", "PUT", "users/{userId}"),
    ("GetUser", "GET", "users/{userId}"),
    ("ListUserPosts", "GET", "users/{userId}/posts"),
    ("CreatePost", "POST", "posts"),
    ("EditPost", "PUT", "posts/{postId}"),
    ("GetPost", "GET", "posts/{postId}"),
    ("CreateComment", "POST", "posts/{postId}/comments"),
    ("ListComments", "GET", "posts/{postId}/comments"),
    ("CreateLike", "POST", "posts/{postId}/likes"),
    ("ListLikes", "GET", "posts/{postId}/likes"),
    ("GetFeed", "GET", "feed"),
    ("GetOpenApi", "GET", "openapi.json"),
];

/// The handler of each HTTP function.
fn handler(function: &str) -> MethodRouter<AppState> {
    match function {
        "CreateUser" => post(users::create),
        "EditUser" => put(users::edit),
        "GetUser" => get(users::get),
        "ListUserPosts" => get(users::list_posts),
        "CreatePost" => post(posts::create),
        "EditPost" => put(posts::edit),
        "GetPost" => get(posts::get),
        "CreateComment" => post(comments::create),
        "ListComments" => get(comments::list),
        "CreateLike" => post(likes::create),
        "ListLikes" => get(likes::list),
        "GetFeed" => get(feed::list),
        "GetOpenApi" => get(openapi::document),
        other => unreachable!("no handler for {other}"),
    }
}

/// Every route the handler serves: the HTTP functions at the paths the host forwards
/// (`/api/...`), `GET /`, and, when the Functions host delivers the change feed
/// (`host_change_feed`), the change-feed functions at `/{FunctionName}`.
///
/// The change-feed routes write copies from whatever batch they are given, so they exist only
/// where the host is their one caller: the host reaches them on loopback, and a client cannot,
/// because every forwarded request keeps the `api` route prefix (host.json), which no change-feed
/// path has. Where the local processors deliver the changes, nothing else may.
pub fn router(state: AppState, max_in_flight: usize, host_change_feed: bool) -> Router {
    let mut api = Router::new();
    for (function, _, route) in HTTP_FUNCTIONS {
        api = api.route(&format!("/{route}"), handler(function));
    }

    let mut router = Router::new()
        // The host's readiness probe: it waits for any answer to `GET /` before sending work.
        .route("/", get(|| async { StatusCode::OK }))
        .nest("/api", api);
    if host_change_feed {
        // Invoked by the host as `POST /{FunctionName}`. A batch holds up to
        // `maxItemsPerInvocation` whole items, so its body may be far larger than an API body.
        let host_batch_limit = axum::extract::DefaultBodyLimit::max(HOST_BATCH_BYTES);
        router = router
            .route("/PostsChangeFeed", post(changefeed::host::posts).layer(host_batch_limit))
            .route("/UsersChangeFeed", post(changefeed::host::users).layer(host_batch_limit));
    }
    router
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(Arc::new(Admission::new(max_in_flight)), admit))
        .layer(axum::middleware::from_fn(observe::per_request))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// How long a client may take to send a request's body once its headers are in.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// The places of requests being worked on: overload is answered 503 at once instead of a place
/// in an unbounded queue (the host and clients retry; the instance stays healthy). Reads and
/// writes have places of their own, so that a flood of one kind cannot starve the other: the
/// front page stays up while writes queue, and the reverse.
struct Admission {
    reads: Arc<Semaphore>,
    writes: Arc<Semaphore>,
}

impl Admission {
    fn new(max_in_flight: usize) -> Self {
        Admission { reads: Arc::new(Semaphore::new(max_in_flight)), writes: Arc::new(Semaphore::new(max_in_flight)) }
    }
}

/// Reads the whole body first, within [`BODY_TIMEOUT`], and only then takes a place (one set of
/// places for the whole router: a layer on the router is applied per route, so the count must
/// live outside): a client that trickles its body holds its own connection, never a place.
async fn admit(State(admission): State<Arc<Admission>>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let is_host_batch = parts.method == axum::http::Method::POST && !parts.uri.path().starts_with("/api/");
    let limit = if is_host_batch { HOST_BATCH_BYTES } else { MAX_BODY_BYTES };
    let bytes = match tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(error)) => {
            let too_large =
                std::error::Error::source(&error).is_some_and(|source| source.is::<http_body_util::LengthLimitError>());
            return if too_large {
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, format!("The request body is over {limit} bytes."))
            } else {
                ApiError::bad_request(format!("The request body could not be read: {error}."))
            }
            .into_response();
        }
        Err(_) => {
            return ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                format!("The request body did not arrive within {} s.", BODY_TIMEOUT.as_secs()),
            )
            .into_response();
        }
    };
    let places = if matches!(parts.method, axum::http::Method::GET | axum::http::Method::HEAD) {
        &admission.reads
    } else {
        &admission.writes
    };
    match places.clone().try_acquire_owned() {
        Ok(_place) => next.run(Request::from_parts(parts, axum::body::Body::from(bytes))).await,
        Err(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "The handler is at its limit of requests in flight; retry in a moment.",
        )
        .into_response(),
    }
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!("There is no resource at {}; see the README for the API's routes.", uri.path()))
}

async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, format!("{} does not accept {method}.", uri.path()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use axum::Router;
    use axum::routing::{get, post};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::sync::Notify;

    use super::{Admission, admit, serve};

    /// A server whose `POST /api/hold` waits until released, behind the admission layer.
    async fn held_server(max_in_flight: usize, header_timeout: Duration) -> (String, Arc<Notify>) {
        let release = Arc::new(Notify::new());
        let waiting = release.clone();
        let router = Router::new()
            .route("/api/hold", post(move || async move { waiting.notified().await }))
            .route("/api/read", get(|| async { "ok" }))
            .layer(axum::middleware::from_fn_with_state(Arc::new(Admission::new(max_in_flight)), admit));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(serve::serve(listener, router, header_timeout, std::future::pending()));
        (base, release)
    }

    #[tokio::test]
    async fn past_max_in_flight_a_request_is_503_at_once_but_only_for_its_kind() {
        let (base, release) = held_server(1, serve::HEADER_TIMEOUT).await;
        let client = reqwest::Client::new();
        let held = tokio::spawn(client.post(format!("{base}/api/hold")).send());
        tokio::time::sleep(Duration::from_millis(200)).await;
        let refused = client.post(format!("{base}/api/hold")).send().await.unwrap();
        assert_eq!(refused.status(), 503);
        assert!(refused.text().await.unwrap().contains("retry"));
        assert_eq!(client.get(format!("{base}/api/read")).send().await.unwrap().status(), 200, "writes do not starve reads");
        release.notify_waiters();
        assert_eq!(held.await.unwrap().unwrap().status(), 200);
    }

    #[tokio::test]
    async fn a_connection_that_does_not_finish_its_headers_is_closed() {
        let (base, _release) = held_server(1, Duration::from_millis(300)).await;
        for request in [&b"GET /api/read HTTP/1.1\r\nHost: x\r\n"[..], b""] {
            let mut stream = tokio::net::TcpStream::connect(base.trim_start_matches("http://")).await.unwrap();
            stream.write_all(request).await.unwrap();
            let mut rest = Vec::new();
            let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest)).await;
            assert!(read.is_ok(), "the server closes a slow or idle connection");
        }
    }
}
