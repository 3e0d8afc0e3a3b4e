//! The HTTP functions: one module per resource, a router that serves them at the paths the
//! Functions host forwards (`/api/...`), and the few extractors they share.
//!
//! Handlers stay thin: validate the input, apply a rule from [`crate::model`], make the one
//! Cosmos call the article's V3 model needs, answer.

mod comments;
mod extract;
mod feed;
mod likes;
pub mod lists;
mod observe;
mod posts;
mod users;

use std::sync::Arc;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;

use crate::cosmos::Store;
use crate::error::ApiError;
use crate::scripts::ScriptExecutor;

pub use extract::{MAX_BODY_BYTES, validate_id};

/// What every handler shares: the store, and whoever runs the server-side scripts.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<Store>,
    pub scripts: Arc<dyn ScriptExecutor>,
}

/// Every route the handler serves. The HTTP routes are the ones `functions/*/function.json`
/// declare, under the host's `api` route prefix.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/users", axum::routing::post(users::create))
        .route("/users/{user_id}", get(users::get).put(users::edit))
        .route("/users/{user_id}/posts", get(users::list_posts))
        .route("/posts", axum::routing::post(posts::create))
        .route("/posts/{post_id}", get(posts::get).put(posts::edit))
        .route("/posts/{post_id}/comments", get(comments::list).post(comments::create))
        .route("/posts/{post_id}/likes", get(likes::list).post(likes::create))
        .route("/feed", get(feed::list));

    Router::new()
        // The host's readiness probe: it waits for any answer to `GET /` before sending work.
        .route("/", get(|| async { StatusCode::OK }))
        .nest("/api", api)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn(observe::per_request))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!("There is no resource at {}; see the README for the API's routes.", uri.path()))
}

async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, format!("{} does not accept {method}.", uri.path()))
}
