//! Why a script could not run to its end, or answered what its caller does not know. Each case
//! comes with what it found, so that a caller tells them apart by kind and a log line says them
//! from their data. A cause (the engine's, the network's, the JSON parser's) is the source,
//! never repeated in the message.

use std::time::Duration;

use super::server_side::KeyNotBase64;

/// The cause of [`super::ScriptError::Failed`].
#[derive(Debug, thiserror::Error)]
pub enum ScriptFailure {
    /// The script ran past its time (in process; Cosmos DB bounds a script by time too).
    #[error("the script did not finish within {limit:?}")]
    DidNotFinish {
        /// The time it had.
        limit: Duration,
    },
    /// The script used more memory than it may.
    #[error("the script ran out of memory (limit {limit_bytes} bytes)")]
    OutOfMemory {
        /// The memory it had.
        limit_bytes: usize,
    },
    /// The script's source does not compile.
    #[error("the script does not compile: {message}")]
    DoesNotCompile {
        /// The engine's SyntaxError message.
        message: String,
    },
    /// The script has no function of the name it is called by.
    #[error("the script defines no function named '{function}'")]
    NoFunction {
        /// The name called.
        function: String,
    },
    /// The in-process engine failed, not the script.
    #[error("the script engine failed")]
    Engine(#[source] rquickjs::Error),
    /// The thread the in-process engine ran on died.
    #[error("the script's thread did not finish")]
    ThreadDied(#[source] tokio::task::JoinError),
    /// The in-process engine's JavaScript asked its host for an operation it does not have.
    #[error("the script asked for an unknown operation {operation:?}")]
    UnknownOperation {
        /// The operation asked for.
        operation: String,
    },
    /// A script's response body that is not JSON.
    #[error("{script} answered a body that is not JSON")]
    BodyNotJson {
        /// The script (in process, the function called).
        script: String,
        /// What the parser found.
        #[source]
        source: serde_json::Error,
    },
    /// A keyed script wrote the document its request writes (its request record), which only
    /// its caller may write.
    #[error("{script} wrote the document its request writes ({id})")]
    WroteItsRequest {
        /// The script.
        script: &'static str,
        /// The request record's id.
        id: String,
    },
    /// A post-trigger asked for on a delete: Cosmos DB runs one after a create, replace or
    /// upsert only.
    #[error("a post-trigger runs after a create, replace or upsert, not a delete")]
    TriggerOnDelete,
    /// The arguments, or the item, that do not serialize to JSON.
    #[error("{what} do not serialize")]
    NotSerializable {
        /// What was serialized ("the arguments", "the item").
        what: &'static str,
        /// What the serializer found.
        #[source]
        source: serde_json::Error,
    },
    /// The account key cannot sign the call.
    #[error("the account key cannot sign the call")]
    Key(#[source] KeyNotBase64),
    /// No Entra ID token for Cosmos DB.
    #[error("no Entra ID token for Cosmos DB")]
    NoToken(#[source] azure_core::Error),
    /// Cosmos DB did not answer (the connection failed).
    #[error("Cosmos DB did not answer")]
    NoAnswer(#[source] reqwest::Error),
    /// Cosmos DB refused the call with a status the application gives no meaning of its own.
    #[error("Cosmos DB answered {status}: {message}")]
    Refused {
        /// The status.
        status: u16,
        /// The `message` of its body, or the body.
        message: String,
    },
    /// A script answered what its caller does not know.
    #[error("{script} answered {answer}{}", in_post(post_id.as_deref()))]
    Answered {
        /// The script.
        script: &'static str,
        /// The post (partition) it ran in, where the caller knows it.
        post_id: Option<String>,
        /// The answer, as the caller read it.
        answer: String,
    },
}

/// ` in post <id>`, or nothing.
fn in_post(post_id: Option<&str>) -> String {
    post_id.map(|post_id| format!(" in post {post_id}")).unwrap_or_default()
}

#[cfg(test)]
mod tests;
