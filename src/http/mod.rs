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
mod users;

use std::sync::Arc;

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
        // Overload is answered at once: past `max_in_flight`, a request gets 503 instead of a
        // place in an unbounded queue (the host and clients retry; the instance stays healthy).
        .layer(axum::middleware::from_fn_with_state(Arc::new(Semaphore::new(max_in_flight)), bounded))
        .layer(axum::middleware::from_fn(observe::per_request))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// Lets a request in while fewer than `max_in_flight` are being worked on (one semaphore for the
/// whole router: a layer on the router is applied per route, so the count must live outside).
async fn bounded(State(places): State<Arc<Semaphore>>, request: Request, next: Next) -> Response {
    match places.try_acquire_owned() {
        Ok(_place) => next.run(request).await,
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
