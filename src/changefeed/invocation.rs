//! What the Functions host POSTs to a custom handler for a change-feed trigger, read.
//!
//! `{"Data": {"documents": ...}, "Metadata": {...}}` (azure-functions-host,
//! `DefaultHttpWorkerService.ProcessDefaultInvocationRequest`,
//! `ScriptInvocationContextExtensions.ToHttpScriptInvocationContext`). The Cosmos DB extension
//! hands a custom handler's documents over as one compact JSON string
//! (azure-webjobs-sdk-extensions, `CosmosDBTriggerValueBinder.GetValueAsync`:
//! `JArray.ToString(Formatting.None)`). The host serializes that string once more
//! (`GetHttpScriptInvocationContextValue`: `JsonConvert.SerializeObject`). The host's own
//! `ScriptInvocationContextExtensionsTests` and `DefaultHttpWorkerServiceTests` expect that. So
//! `Data.documents` is a JSON string holding a JSON string holding the array. [`documents`]
//! unwraps every string layer; an array as such is accepted too. Read by [`super::host`] as
//! invocations arrive, and by [`super::dead_letters`] to deliver a set-aside one again.

use serde::Deserialize;
use serde_json::Value;

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

/// How many string layers [`documents`] unwraps: the host's two, and room for one more.
const MAX_STRING_LAYERS: usize = 4;

/// The changed items of an invocation, through every layer of string encoding (at most a few:
/// a string that keeps holding strings is no batch).
pub(super) fn documents(value: Value) -> Result<Vec<Value>, InvocationError> {
    let mut value = value;
    for _ in 0..MAX_STRING_LAYERS {
        value = match value {
            Value::Array(documents) => return Ok(documents),
            Value::Null => return Ok(Vec::new()),
            Value::String(text) => {
                serde_json::from_str(&text).map_err(InvocationError::DocumentsNotJson)?
            }
            other => return Err(InvocationError::NotAnArray { found: kind(&other) }),
        };
    }
    Err(InvocationError::NestedTooDeep { layers: MAX_STRING_LAYERS })
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
pub(super) fn read_invocation(body: &[u8]) -> Result<(Vec<Value>, Option<i64>), InvocationError> {
    let invocation: Invocation =
        serde_json::from_slice(body).map_err(InvocationError::NotAnInvocation)?;
    let attempt = invocation.metadata.retry_context.map(|retry| retry.retry_count);
    Ok((documents(invocation.data.documents)?, attempt))
}

/// Why an invocation's body is not a batch of changes. The JSON parser's own message is the
/// source, below the sentence that says which layer it is about.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InvocationError {
    /// The body is not the host's invocation request.
    #[error("the body is not a Functions host invocation")]
    NotAnInvocation(#[source] serde_json::Error),
    /// A string layer of `Data.documents` does not hold JSON.
    #[error("Data.documents does not hold JSON")]
    DocumentsNotJson(#[source] serde_json::Error),
    /// `Data.documents` holds something other than an array (or strings that hold one).
    #[error("Data.documents must hold an array of items, not {found}")]
    NotAnArray {
        /// What it holds: `an object`, `a boolean`, `a number`.
        found: &'static str,
    },
    /// `Data.documents` is a string within a string more often than any host encodes it.
    #[error("Data.documents is a string nested too deep to be a batch (more than {layers} layers)")]
    NestedTooDeep {
        /// How many layers were unwrapped before giving up.
        layers: usize,
    },
}

#[cfg(test)]
mod tests {
    use super::{InvocationError, documents, read_invocation};
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
        assert!(matches!(
            documents(json!({"id": "1"})),
            Err(InvocationError::NotAnArray { found: "an object" })
        ));
        assert!(matches!(documents(json!("[1,")), Err(InvocationError::DocumentsNotJson(_))));
        let mut deep = Value::String("[]".into());
        for _ in 0..4 {
            deep = Value::String(deep.to_string());
        }
        assert!(matches!(documents(deep), Err(InvocationError::NestedTooDeep { layers: 4 })));
        assert!(matches!(read_invocation(b"{}"), Err(InvocationError::NotAnInvocation(_))));
    }
}
