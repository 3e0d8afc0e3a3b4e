//! The change-feed functions as the Functions host invokes them.
//!
//! For a non-HTTP trigger the host POSTs `/{FunctionName}` with `{"Data": {...}, "Metadata":
//! {...}}` (azure-functions-host, `DefaultHttpWorkerService.ProcessDefaultInvocationRequest`,
//! `ScriptInvocationContextExtensions.ToHttpScriptInvocationContext`). The Cosmos DB extension
//! hands a custom handler's documents over as one compact JSON string
//! (azure-webjobs-sdk-extensions, `CosmosDBTriggerValueBinder.GetValueAsync`: `JArray.ToString(
//! Formatting.None)`), and the host serializes that string once more
//! (`GetHttpScriptInvocationContextValue`: `JsonConvert.SerializeObject`, as the host's own
//! `ScriptInvocationContextExtensionsTests` and `DefaultHttpWorkerServiceTests` expect), so
//! `Data.documents` is a JSON string holding a JSON string holding the array. [`documents`]
//! unwraps every string layer; an array as such is accepted too.
//!
//! The answer is `{"Outputs": {}, "Logs": [...], "ReturnValue": null}` as `application/json`
//! (the host reads it with `ReadAsAsync<HttpScriptInvocationResult>`). A non-2xx answer fails
//! the invocation (`EnsureSuccessStatusCode`) and the function's retry policy delivers the batch
//! again; with `maxRetryCount: -1` the lease does not move until an answer is 2xx. So only a
//! passing failure is answered 500: an invocation that can never be read is set aside as a
//! dead letter (kept whole, see [`super::dead_letters`]) and acknowledged, so that it cannot
//! hold every later change behind it.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Function, dead_letters};
use crate::app::AppState;

/// The host's invocation request for a non-HTTP trigger.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Invocation {
    data: InvocationData,
    #[serde(default)]
    metadata: Metadata,
}

#[derive(Deserialize)]
struct InvocationData {
    /// The binding named `documents` in the function's function.json.
    documents: Value,
}

/// The part of `Metadata` worth a log line: which attempt this is. The host adds
/// `RetryContext` whenever the function has a retry policy, from the first attempt on
/// (`ScriptInvocationContextExtensions.SetRetryContext`).
#[derive(Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Metadata {
    retry_context: Option<RetryContext>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RetryContext {
    retry_count: i64,
}

/// The changed items of an invocation, through every layer of string encoding (at most a few:
/// a string that keeps holding strings is no batch).
pub fn documents(value: Value) -> Result<Vec<Value>, String> {
    let mut value = value;
    for _ in 0..4 {
        value = match value {
            Value::Array(documents) => return Ok(documents),
            Value::Null => return Ok(Vec::new()),
            Value::String(text) => {
                serde_json::from_str(&text).map_err(|error| format!("Data.documents does not hold JSON: {error}"))?
            }
            other => return Err(format!("Data.documents must hold an array of items, not {}", kind(&other))),
        };
    }
    Err("Data.documents is a string nested too deep to be a batch".into())
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Object(_) => "an object",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        _ => "a string",
    }
}

/// Reads an invocation's documents and its attempt number.
pub(super) fn read_invocation(body: &[u8]) -> Result<(Vec<Value>, Option<i64>), String> {
    let invocation: Invocation =
        serde_json::from_slice(body).map_err(|error| format!("the body is not a Functions host invocation: {error}"))?;
    let attempt = invocation.metadata.retry_context.map(|retry| retry.retry_count);
    Ok((documents(invocation.data.documents)?, attempt))
}

/// The answer to one invocation: its body, and whether the host must deliver the batch again
/// (answered with a non-2xx status; see the module's comment).
pub struct HostAnswer {
    pub retry: bool,
    pub body: Value,
}

/// Runs one invocation and answers the host.
/// `invocation_id` is the host's `x-azure-functions-invocationid`, the same on every attempt of
/// one invocation (`DefaultHttpWorkerService.AddHeaders`).
pub async fn invoke(state: &AppState, function: Function, invocation_id: &str, body: &[u8]) -> HostAnswer {
    let name = function.name();
    let (documents, attempt) = match read_invocation(body) {
        Ok(read) => read,
        Err(why) => {
            let payload = String::from_utf8_lossy(body);
            return match dead_letters::set_aside(&state.store, name, "invocation", &why, &payload).await {
                Ok(id) => answer(false, format!("{name}: the invocation could not be read ({why}); set aside as {id}")),
                Err(error) => {
                    tracing::error!(target: "blog::changefeed", function = name, invocation_id, %why, %error, "an unreadable invocation could not be set aside; the host will deliver it again");
                    answer(true, format!("{name}: cannot set aside an unreadable invocation: {error}"))
                }
            };
        }
    };
    let count = documents.len();
    // The host's retry policy delivers a failed batch again, forever: from the ISOLATE_AFTER-th
    // attempt on, the change that keeps failing is looked for and set aside.
    let delivered = if attempt.is_some_and(|attempt| attempt >= i64::from(super::ISOLATE_AFTER)) {
        function.deliver_item_by_item(state, documents).await
    } else {
        function.deliver(state, documents).await
    };
    match delivered {
        Ok(report) => {
            tracing::info!(target: "blog::changefeed", function = name, invocation_id, attempt, count, applied = report.applied, ignored = report.ignored, set_aside = report.set_aside, "batch");
            answer(
                false,
                format!(
                    "{name}: {count} changes: {} applied, {} of other types, {} malformed and set aside",
                    report.applied, report.ignored, report.set_aside
                ),
            )
        }
        Err(error) => {
            tracing::error!(target: "blog::changefeed", function = name, invocation_id, attempt, count, %error, "batch failed; the host will deliver it again");
            answer(true, format!("{name}: the batch of {count} failed and will be retried: {error}"))
        }
    }
}

fn answer(retry: bool, line: String) -> HostAnswer {
    HostAnswer { retry, body: json!({"Outputs": {}, "Logs": [line], "ReturnValue": null}) }
}

#[cfg(test)]
mod tests {
    use super::documents;
    use serde_json::{Value, json};

    #[test]
    fn every_string_layer_is_unwrapped() {
        let items = json!([{"id": "1", "n": 2}]);
        let once = Value::String(items.to_string());
        let twice = Value::String(once.to_string());
        for value in [items.clone(), once, twice] {
            assert_eq!(documents(value).unwrap(), items.as_array().unwrap().clone());
        }
        assert_eq!(documents(Value::Null).unwrap(), Vec::<Value>::new());
        assert!(documents(json!({"id": "1"})).is_err());
        assert!(documents(json!("[1,")).is_err());
        let mut deep = Value::String("[]".into());
        for _ in 0..4 {
            deep = Value::String(deep.to_string());
        }
        assert!(documents(deep).is_err());
    }
}
