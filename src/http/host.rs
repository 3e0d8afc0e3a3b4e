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
use crate::app::scheduled::publish_due;
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

/// `POST /PublishScheduled`: the timer function's invocation (`functions/PublishScheduled`,
/// once a minute). The host sends `{"Data": {"timer": <TimerInfo>}, "Metadata": {...}}`
/// (azure-functions-host `ScriptInvocationContextExtensions.ToHttpScriptInvocationContext`).
/// Its `TimerInfo` is azure-webjobs-sdk-extensions' type, with `Schedule`, `ScheduleStatus` and
/// `IsPastDue`. Nothing in it changes what the run does: every post due by now is published, so
/// a past-due run catches up as any other. An invocation that is not of that shape is set aside
/// (logged, answered 200 so the host does not retry it), and the next minute's run publishes. A
/// run that fails is answered 500; the host logs it, and the next minute's run tries again.
pub(super) async fn publish_scheduled(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let invocation_id = invocation_id(&headers);
    let Some(past_due) = timer_invocation(&body) else {
        tracing::warn!(target: "blog::scheduled", invocation_id, bytes = body.len(), "a timer invocation not of the host's shape was set aside; the next run publishes");
        return timer_answer(
            StatusCode::OK,
            "PublishScheduled: the invocation is not a timer's; set aside".to_owned(),
        );
    };
    match publish_due(&state, time::OffsetDateTime::now_utc()).await {
        Ok(done) => timer_answer(
            StatusCode::OK,
            format!(
                "PublishScheduled{}: {} published, {} listings no longer due",
                if past_due { " (past due)" } else { "" },
                done.published,
                done.stale
            ),
        ),
        Err(error) => {
            tracing::error!(target: "blog::scheduled", invocation_id, error = %crate::logging::with_causes(&error), "the scheduled posts' run failed; the next runs in a minute");
            timer_answer(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("PublishScheduled failed: {}", crate::logging::with_causes(&error)),
            )
        }
    }
}

/// Whether the timer's invocation `body` is past due (`IsPastDue`); `None` when it is not a
/// timer's invocation. `Data.timer` is the `TimerInfo` as an object; as a JSON string too, as
/// the host hands a string-typed input on.
fn timer_invocation(body: &[u8]) -> Option<bool> {
    let invocation: serde_json::Value = serde_json::from_slice(body).ok()?;
    let timer = invocation.get("Data")?.get("timer")?;
    let timer = match timer {
        serde_json::Value::String(text) => serde_json::from_str(text).ok()?,
        other => other.clone(),
    };
    timer.get("IsPastDue")?.as_bool()
}

fn timer_answer(status: StatusCode, line: String) -> Response {
    let body = serde_json::json!({"Outputs": {}, "Logs": [line], "ReturnValue": null});
    (status, Json(body)).into_response()
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
