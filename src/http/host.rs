//! The change-feed functions' routes under the Functions host: `POST /{FunctionName}`, the
//! host's invocation in, its answer out (the protocol is in [`crate::changefeed::host`]). A
//! batch the host must deliver again is answered 500: the host fails the invocation
//! (`EnsureSuccessStatusCode`) and its retry policy takes over.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::app::AppState;
use crate::changefeed::Function;
use crate::changefeed::host::{HostAnswer, invoke};

/// `POST /PostsChangeFeed`
pub(super) async fn posts(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(invoke(&state, Function::PostsChangeFeed, invocation_id(&headers), &body).await)
}

/// `POST /UsersChangeFeed`
pub(super) async fn users(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(invoke(&state, Function::UsersChangeFeed, invocation_id(&headers), &body).await)
}

/// The header the host names each invocation in, on its change-feed invocations and on the
/// requests it forwards alike (azure-functions-host `DefaultHttpWorkerService.AddHeaders`).
pub(super) const INVOCATION_ID: &str = "x-azure-functions-invocationid";

fn invocation_id(headers: &HeaderMap) -> &str {
    headers.get(INVOCATION_ID).and_then(|value| value.to_str().ok()).unwrap_or("")
}

fn answer(HostAnswer { retry, body }: HostAnswer) -> Response {
    let status = if retry { StatusCode::INTERNAL_SERVER_ERROR } else { StatusCode::OK };
    (status, Json(body)).into_response()
}
