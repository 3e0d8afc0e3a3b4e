//! The change-feed functions as the Functions host invokes them.
//!
//! For a non-HTTP trigger the host POSTs `/{FunctionName}` with `{"Data": {...}, "Metadata":
//! {...}}` (azure-functions-host, `DefaultHttpWorkerService.ProcessDefaultInvocationRequest`,
//! `ScriptInvocationContextExtensions.ToHttpScriptInvocationContext`); [`super::invocation`]
//! reads it.
//!
//! The answer is `{"Outputs": {}, "Logs": [...], "ReturnValue": null}` as `application/json`
//! (the host reads it with `ReadAsAsync<HttpScriptInvocationResult>`). A non-2xx answer fails
//! the invocation (`EnsureSuccessStatusCode`) and the function's retry policy delivers the batch
//! again; with `maxRetryCount: -1` the lease does not move until an answer is 2xx. So only a
//! passing failure is answered 500: an invocation that can never be read is set aside as a
//! dead letter (kept whole, see [`super::dead_letters`]) and acknowledged, so that it cannot
//! hold every later change behind it.

use serde_json::{Value, json};

use super::invocation::read_invocation;
use super::{Delivery, Function, dead_letters};
use crate::app::AppState;
use crate::cosmos::Meter;

/// The answer to one invocation: its body, and whether the host must deliver the batch again
/// (answered with a non-2xx status; see the module's comment).
pub(crate) struct HostAnswer {
    /// Whether the host should deliver the batch again (a passing failure).
    pub retry: bool,
    /// The answer's body, as the host logs it.
    pub body: Value,
}

/// Runs one invocation and answers the host.
/// `invocation_id` is the host's `x-azure-functions-invocationid`, the same on every attempt of
/// one invocation (`DefaultHttpWorkerService.AddHeaders`).
pub(crate) async fn invoke(
    state: &AppState,
    function: Function,
    invocation_id: &str,
    body: &[u8],
) -> HostAnswer {
    let name = function.name();
    let (documents, attempt) = match read_invocation(body) {
        Ok(read) => read,
        Err(error) => {
            let why = crate::logging::with_causes(&error);
            let payload = String::from_utf8_lossy(body);
            return match dead_letters::set_aside(&state.store, name, "invocation", &why, &payload)
                .await
            {
                Ok(id) => answer(
                    false,
                    format!("{name}: the invocation could not be read ({why}); set aside as {id}"),
                ),
                Err(error) => {
                    tracing::error!(target: "blog::changefeed", function = name, invocation_id, %why, error = %crate::logging::with_causes(&error), "an unreadable invocation could not be set aside; the host will deliver it again");
                    answer(
                        true,
                        format!(
                            "{name}: cannot set aside an unreadable invocation: {}",
                            crate::logging::with_causes(&error)
                        ),
                    )
                }
            };
        }
    };
    let count = documents.len();
    let oldest_age_s = super::oldest_age_s(&documents);
    // The host's retry policy delivers a failed batch again, forever: from the ISOLATE_AFTER-th
    // attempt on, the change that keeps failing is looked for and set aside.
    let delivered = if attempt.is_some_and(|attempt| attempt >= i64::from(super::ISOLATE_AFTER)) {
        function.deliver_item_by_item(state, documents).await
    } else {
        function.deliver(state, documents).await
    };
    match delivered {
        Ok(report) => {
            // The invocation is a request through the front door, whose meter has counted it.
            let cost = Meter::current().map_or((0.0, 0), |meter| meter.totals());
            let invocation_id = Some(invocation_id).filter(|id| !id.is_empty());
            Delivery {
                function,
                count,
                report: &report,
                cost,
                oldest_age_s,
                invocation_id,
                attempt,
            }
            .log();
            answer(
                false,
                format!(
                    "{name}: {count} changes: {} applied, {} of other types, {} malformed and set aside",
                    report.applied, report.ignored, report.set_aside
                ),
            )
        }
        Err(error) => {
            tracing::error!(target: "blog::changefeed", function = name, invocation_id, attempt, count, error = %crate::logging::with_causes(&error), "batch failed; the host will deliver it again");
            answer(
                true,
                format!(
                    "{name}: the batch of {count} failed and will be retried: {}",
                    crate::logging::with_causes(&error)
                ),
            )
        }
    }
}

fn answer(retry: bool, line: String) -> HostAnswer {
    HostAnswer { retry, body: json!({"Outputs": {}, "Logs": [line], "ReturnValue": null}) }
}
