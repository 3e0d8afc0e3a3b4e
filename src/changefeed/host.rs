//! The change-feed functions as the Functions host invokes them: `POST /{FunctionName}` with
//! `{"Data": {"documents": <the changed items>}, "Metadata": {...}}`, answered with
//! `{"Outputs": {}, "Logs": [...], "ReturnValue": null}`. The host hands the documents over as
//! a JSON string holding the array; an array is accepted too.
//!
//! Any non-2xx answer fails the invocation, and the function's retry policy delivers the batch
//! again: a batch is answered 200 only once every copy it implies is written.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{BatchReport, FeedError, posts_changed, users_changed};
use crate::error::ApiError;
use crate::http::AppState;

/// The host's invocation request for a non-HTTP trigger.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Invocation {
    /// The trigger's data; `Metadata` (also sent) is not needed here.
    data: InvocationData,
}

#[derive(Deserialize)]
struct InvocationData {
    /// The binding named `documents` in the function's function.json.
    documents: Value,
}

impl Invocation {
    fn documents(self) -> Result<Vec<Value>, ApiError> {
        let documents = match self.data.documents {
            Value::String(text) => serde_json::from_str(&text)
                .map_err(|error| ApiError::bad_request(format!("Data.documents is not a JSON array of items: {error}")))?,
            other => other,
        };
        match documents {
            Value::Array(documents) => Ok(documents),
            Value::Null => Ok(Vec::new()),
            _ => Err(ApiError::bad_request("Data.documents must be an array of items (or a string holding one).")),
        }
    }
}

/// `POST /PostsChangeFeed`
pub async fn posts(State(state): State<AppState>, body: Bytes) -> Response {
    run("PostsChangeFeed", &body, |documents| posts_changed(&state, documents)).await
}

/// `POST /UsersChangeFeed`
pub async fn users(State(state): State<AppState>, body: Bytes) -> Response {
    run("UsersChangeFeed", &body, |documents| users_changed(&state, documents)).await
}

/// Parses the invocation, runs the function on its documents, and answers the host.
async fn run<F: Future<Output = Result<BatchReport, FeedError>>>(
    function: &str,
    body: &[u8],
    handle: impl FnOnce(Vec<Value>) -> F,
) -> Response {
    let documents = match serde_json::from_slice::<Invocation>(body) {
        Ok(invocation) => invocation.documents(),
        Err(error) => Err(ApiError::bad_request(format!("The body is not a Functions host invocation: {error}."))),
    };
    let documents = match documents {
        Ok(documents) => documents,
        Err(error) => return error.into_response(),
    };
    let count = documents.len();
    let (status, line) = match handle(documents).await {
        Ok(report) => {
            tracing::info!(target: "blog::changefeed", function, count, applied = report.applied, ignored = report.ignored, poison = report.poison, "batch");
            let line = format!(
                "{function}: {count} changes: {} applied, {} of other types, {} malformed and skipped",
                report.applied, report.ignored, report.poison
            );
            (StatusCode::OK, line)
        }
        Err(error) => {
            tracing::error!(target: "blog::changefeed", function, count, %error, "batch failed; the host will deliver it again");
            (StatusCode::INTERNAL_SERVER_ERROR, format!("{function}: the batch of {count} failed and will be retried: {error}"))
        }
    };
    (status, Json(json!({"Outputs": {}, "Logs": [line], "ReturnValue": null}))).into_response()
}
