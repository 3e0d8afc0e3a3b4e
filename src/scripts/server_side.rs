//! Runs the article's scripts where Bicep deploys them: inside Cosmos DB, through its REST API.
//!
//! The official Rust SDK has no API for stored procedures or triggers, and no way to send a raw
//! signed request through its pipeline. So this module makes the two calls itself: execute a
//! stored procedure, and write a document that names a post-trigger. Each call is signed the way
//! the SDKs sign theirs (master key or Entra ID token), bounded in time, retried after the wait
//! Cosmos DB asks for on 429/449, and counted on the request's [`Meter`] like every SDK call.

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use azure_core::credentials::{Secret, TokenCredential};
use base64::Engine as _;
use reqwest::{Method, StatusCode, Url};
use serde_json::Value;

use super::{PostTrigger, ScriptError, ScriptExecutor, ScriptFailure, StoredProcedure};
use crate::cosmos::{Container, Meter, Scope, StoreError, WriteOp};

/// The REST API version the requests are written against.
const API_VERSION: &str = "2018-12-31";
/// How long one HTTP exchange may take, like the store's SDK calls.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// At most this many tries of one call while Cosmos DB answers 429 or 449 ...
const MAX_ATTEMPTS: u32 = 9;
/// ... and at most this long waiting between them, so a throttled request still answers.
const RETRY_BUDGET: Duration = Duration::from_secs(30);
/// The Entra ID scope `azure_data_cosmos` 1.0.0 asks tokens for (`COSMOS_AAD_SCOPE`).
const ENTRA_SCOPE: &str = "https://cosmos.azure.com/.default";

/// How the calls prove their right to the account.
pub enum ScriptCredential {
    /// The account's primary or secondary key, base64 as the portal shows it.
    Key(String),
    /// An Entra ID identity with a data-plane role on the account; it caches its own tokens.
    Entra(Arc<dyn TokenCredential>),
}

impl fmt::Debug for ScriptCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the key.
        match self {
            Self::Key(_) => f.write_str("Key(<redacted>)"),
            Self::Entra(credential) => f.debug_tuple("Entra").field(credential).finish(),
        }
    }
}

/// The account key is not base64, so nothing can be signed with it. The error holds nothing of
/// the key: it is a secret, and the error goes to the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the Cosmos DB account key is not valid base64")]
pub struct KeyNotBase64;

/// Why [`ServerSideScripts::new`] refuses its settings.
#[derive(Debug, thiserror::Error)]
pub enum ScriptsSetupError {
    /// The endpoint is not a URL.
    #[error("invalid Cosmos DB endpoint {endpoint:?}")]
    Endpoint {
        /// As given.
        endpoint: String,
        /// Why it is not a URL.
        #[source]
        error: <Url as std::str::FromStr>::Err,
    },
    /// Neither https, nor http to a local emulator.
    #[error("refusing {scheme} to {endpoint}: use https (http is for a local emulator only)")]
    Scheme {
        /// As given.
        endpoint: String,
        /// Its scheme.
        scheme: String,
    },
    /// The account key cannot sign.
    #[error(transparent)]
    Key(#[from] KeyNotBase64),
    /// The HTTP client could not be made (its TLS settings).
    #[error("cannot build the HTTP client")]
    Client(#[source] reqwest::Error),
}

/// A [`ScriptExecutor`] whose scripts run in Cosmos DB itself, as deployed by Bicep.
pub struct ServerSideScripts {
    http: reqwest::Client,
    /// The account endpoint, with the path `/`.
    endpoint: Url,
    database: String,
    credential: ScriptCredential,
}

impl fmt::Debug for ServerSideScripts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerSideScripts")
            .field("endpoint", &self.endpoint.as_str())
            .field("database", &self.database)
            .field("credential", &self.credential)
            .finish_non_exhaustive()
    }
}

impl ServerSideScripts {
    /// An executor for the account at `endpoint` (`https://<account>.documents.azure.com:443/`).
    /// Plain `http` and an untrusted certificate are accepted only for a loopback host (a local
    /// emulator or test server), never for a remote account.
    pub fn new(
        endpoint: &str,
        database: &str,
        credential: ScriptCredential,
    ) -> Result<Self, ScriptsSetupError> {
        let mut url = Url::parse(endpoint).map_err(|error| ScriptsSetupError::Endpoint {
            endpoint: endpoint.to_owned(),
            error,
        })?;
        let loopback = is_loopback(&url);
        match url.scheme() {
            "https" => {}
            "http" if loopback => {}
            other => {
                return Err(ScriptsSetupError::Scheme {
                    endpoint: endpoint.to_owned(),
                    scheme: other.to_owned(),
                });
            }
        }
        url.set_path("/");
        url.set_query(None);
        url.set_fragment(None);
        if let ScriptCredential::Key(key) = &credential
            && base64::engine::general_purpose::STANDARD.decode(key).is_err()
        {
            return Err(KeyNotBase64.into());
        }
        // The emulator serves a self-signed certificate: like the SDK's
        // `ServerCertificateValidation::RequiredUnlessEmulator`, trust it on loopback only.
        let http = reqwest::Client::builder()
            .tls_danger_accept_invalid_certs(loopback)
            .build()
            .map_err(ScriptsSetupError::Client)?;
        Ok(ServerSideScripts { http, endpoint: url, database: database.to_owned(), credential })
    }

    /// The `authorization` header for master-key access, as the Cosmos DB REST API documents it
    /// and the SDKs compute it. It holds the verb, resource type, resource link and date
    /// (`x-ms-date`), each on its own line, then an empty line. The verb, type and date are
    /// lowercased, the link as is. That is signed with HMAC-SHA256 under the decoded key, and
    /// the whole is URL-encoded. Public so that the tests can check it against vectors computed
    /// by Microsoft's Python SDK.
    pub fn master_key_authorization(
        verb: &str,
        resource_type: &str,
        resource_link: &str,
        date: &str,
        key: &str,
    ) -> Result<String, KeyNotBase64> {
        let text = format!(
            "{}\n{}\n{resource_link}\n{}\n\n",
            verb.to_lowercase(),
            resource_type.to_lowercase(),
            date.to_lowercase()
        );
        let signature = azure_core::hmac::hmac_sha256(&text, &Secret::new(key.to_owned()))
            .map_err(|_| KeyNotBase64)?;
        Ok(url_encode(&format!("type=master&ver=1.0&sig={signature}")))
    }

    async fn authorization(&self, call: &Call<'_>, date: &str) -> Result<String, ScriptError> {
        match &self.credential {
            ScriptCredential::Key(key) => Self::master_key_authorization(
                call.method.as_str(),
                call.resource_type,
                &call.resource.join("/"),
                date,
                key,
            )
            .map_err(|error| ScriptError::Failed(ScriptFailure::Key(error))),
            ScriptCredential::Entra(credential) => {
                let token = credential
                    .get_token(&[ENTRA_SCOPE], None)
                    .await
                    .map_err(|error| ScriptError::Failed(ScriptFailure::NoToken(error)))?;
                Ok(url_encode(&format!("type=aad&ver=1.0&sig={}", token.token.secret())))
            }
        }
    }

    /// The URL of `call`: the resource's path, plus the resource type for a POST to a feed.
    fn url(&self, call: &Call<'_>) -> Url {
        let mut url = self.endpoint.clone();
        {
            // The endpoint was checked to be http(s), which always has path segments.
            let mut segments = url.path_segments_mut().expect("an http(s) URL has a path");
            segments.pop_if_empty().extend(&call.resource);
            if call.to_feed {
                segments.push(call.resource_type);
            }
        }
        url
    }

    /// Sends `call`, again after the wait Cosmos DB asks for while it answers 429 (throttled) or
    /// 449 (retry with: a concurrent write), and returns the body of its success.
    async fn send(&self, call: &Call<'_>) -> Result<Vec<u8>, ScriptError> {
        let started = Instant::now();
        let mut attempt = 1;
        loop {
            let answer = self.exchange(call).await?;
            if answer.status.is_success() {
                return Ok(answer.body);
            }
            let wait = answer.retry_after.unwrap_or(Duration::from_millis(50 << attempt.min(5)));
            if matches!(answer.status.as_u16(), 429 | 449)
                && attempt < MAX_ATTEMPTS
                && started.elapsed() + wait <= RETRY_BUDGET
            {
                tokio::time::sleep(wait).await;
                attempt += 1;
                continue;
            }
            return Err(failure(&answer));
        }
    }

    /// One signed HTTP exchange, bounded in time and metered (a failed one too: Cosmos DB bills
    /// it, and the response headers count operations).
    async fn exchange(&self, call: &Call<'_>) -> Result<Answer, ScriptError> {
        let date = rfc1123_now();
        let authorization = self.authorization(call, &date).await?;
        let mut request = self
            .http
            .request(call.method.clone(), self.url(call))
            .header("authorization", authorization)
            .header("x-ms-date", &date)
            .header("x-ms-version", API_VERSION)
            .header("x-ms-documentdb-partitionkey", partition_key_header(call.partition_key))
            .header("accept", "application/json")
            .header("content-type", "application/json")
            .body(call.body.clone());
        for (name, value) in &call.headers {
            request = request.header(*name, value);
        }
        // Whether this exchange was counted yet: once, whatever happens (a failed exchange too,
        // so that the request's operation count stays true).
        let counted = AtomicBool::new(false);
        let count = |charge: f64| {
            if !counted.swap(true, Ordering::Relaxed) {
                Meter::record(Scope::partition(call.container, call.partition_key), charge);
            }
        };
        let exchange = async {
            let response = request.send().await?;
            let headers = response.headers();
            let number = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok();
            count(number("x-ms-request-charge").unwrap_or(0.0));
            let retry_after = number("x-ms-retry-after-ms")
                .and_then(|ms| Duration::try_from_secs_f64(ms / 1000.0).ok());
            let substatus = headers
                .get("x-ms-substatus")
                .and_then(|value| value.to_str().ok()?.trim().parse().ok());
            let status = response.status();
            let body = response.bytes().await?.to_vec();
            Ok::<_, reqwest::Error>(Answer { status, retry_after, substatus, body })
        };
        let outcome = tokio::time::timeout(CALL_TIMEOUT, exchange).await;
        count(0.0);
        match outcome {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(error)) => {
                Err(ScriptError::Failed(ScriptFailure::NoAnswer(error.without_url())))
            }
            Err(_) => Err(StoreError::Timeout.into()),
        }
    }
}

/// One REST call to make.
struct Call<'a> {
    method: Method,
    /// The resource type of the signature: `sprocs` or `docs`.
    resource_type: &'static str,
    /// The signed resource link, as segments: the procedure for an execution, the container for
    /// a create or upsert, the document for a replace.
    resource: Vec<&'a str>,
    /// Whether the URL is the link's feed of `resource_type` (`.../colls/feed/docs`).
    to_feed: bool,
    container: Container,
    partition_key: &'a str,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

struct Answer {
    status: StatusCode,
    retry_after: Option<Duration>,
    /// `x-ms-substatus`: for a script's `new Error(number, message)`, the number.
    substatus: Option<i64>,
    body: Vec<u8>,
}

#[async_trait]
impl ScriptExecutor for ServerSideScripts {
    async fn execute_json(
        &self,
        procedure: StoredProcedure,
        partition_key: &str,
        args: Vec<Value>,
    ) -> Result<Value, ScriptError> {
        let body = serde_json::to_vec(&args).map_err(|source| {
            ScriptError::Failed(ScriptFailure::NotSerializable { what: "the arguments", source })
        })?;
        let call = Call {
            method: Method::POST,
            resource_type: "sprocs",
            resource: vec![
                "dbs",
                &self.database,
                "colls",
                procedure.container().name(),
                "sprocs",
                procedure.name(),
            ],
            to_feed: false,
            container: procedure.container(),
            partition_key,
            headers: Vec::new(),
            body,
        };
        let body = self.send(&call).await?;
        // A procedure that sets no body answers an empty one.
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&body).map_err(|source| {
            ScriptError::Failed(ScriptFailure::BodyNotJson {
                script: procedure.name().to_owned(),
                source,
            })
        })
    }

    async fn write_with_trigger(
        &self,
        trigger: PostTrigger,
        partition_key: &str,
        write: WriteOp,
    ) -> Result<(), ScriptError> {
        let script = trigger.script();
        let mut headers = vec![("x-ms-documentdb-post-trigger-include", script.name.to_owned())];
        let (method, id, document, if_match) = match write {
            WriteOp::Create { document } => (Method::POST, None, document, None),
            WriteOp::Upsert { document, if_match } => {
                headers.push(("x-ms-documentdb-is-upsert", "True".to_owned()));
                (Method::POST, None, document, if_match)
            }
            WriteOp::Replace { id, document, if_match } => {
                (Method::PUT, Some(id), document, if_match)
            }
            // As in `InProcessScripts`: Cosmos DB runs a post-trigger after these three only.
            WriteOp::Delete { .. } => {
                return Err(ScriptError::Failed(ScriptFailure::TriggerOnDelete));
            }
        };
        headers.extend(if_match.map(|etag| ("if-match", etag)));
        let mut resource = vec!["dbs", &self.database, "colls", script.container.name()];
        resource.extend(id.as_deref().map(|id| ["docs", id]).into_iter().flatten());
        let body = serde_json::to_vec(&document).map_err(|source| {
            ScriptError::Failed(ScriptFailure::NotSerializable { what: "the item", source })
        })?;
        let call = Call {
            method,
            resource_type: "docs",
            resource,
            to_feed: id.is_none(),
            container: script.container,
            partition_key,
            headers,
            body,
        };
        self.send(&call).await.map(drop)
    }
}

/// What a failed call means to the application.
fn failure(answer: &Answer) -> ScriptError {
    let Answer { status, retry_after, substatus, ref body } = *answer;
    match status.as_u16() {
        404 => StoreError::NotFound.into(),
        409 => StoreError::Conflict.into(),
        412 => StoreError::PreconditionFailed.into(),
        status @ (408 | 410 | 500 | 502 | 503 | 504) => StoreError::Unavailable(status).into(),
        429 => StoreError::Throttled { retry_after }.into(),
        // "Retry with" after every retry: concurrent writes kept winning.
        449 => ScriptError::Contention,
        // A script's throw: its kind from the substatus (the number it threw with), as in process.
        400 => match thrown_message(body) {
            Some(message) => ScriptError::thrown(substatus, message),
            None => ScriptError::Failed(ScriptFailure::Refused {
                status: status.as_u16(),
                message: cosmos_message(body),
            }),
        },
        _ => ScriptError::Failed(ScriptFailure::Refused {
            status: status.as_u16(),
            message: cosmos_message(body),
        }),
    }
}

/// The `message` of a Cosmos DB error body (`{"code": ..., "message": ...}`), or the body.
fn cosmos_message(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let message = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|error| error.get("message").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| text.into_owned());
    message.chars().take(2000).collect()
}

/// What the script threw, from the 400 Cosmos DB answers then. Its message embeds a JSON object
/// whose first error reads `Encountered exception while executing function. Exception = Error:
/// <the script's message>\r\nStack trace: ...`; this returns `<the script's message>`. `None`
/// when the 400 is not a script's exception (a malformed request).
fn thrown_message(body: &[u8]) -> Option<String> {
    let message = cosmos_message(body);
    let errors = message.find("{\"Errors\"").and_then(|start| {
        let embedded = serde_json::Deserializer::from_str(&message[start..])
            .into_iter::<Value>()
            .next()?
            .ok()?;
        let errors =
            embedded.get("Errors")?.as_array()?.iter().filter_map(Value::as_str).map(str::to_owned);
        Some(errors.collect::<Vec<_>>())
    });
    // Without the embedded object (a message cut short), read the message itself.
    let candidates = errors.unwrap_or_else(|| vec![message.clone()]);
    let (_, thrown) = candidates.iter().find_map(|error| error.split_once("Exception = "))?;
    let thrown = thrown.split("Stack trace:").next().unwrap_or(thrown);
    let thrown = thrown.trim_end().trim_end_matches("\\r\\n").trim_end_matches("\\n").trim();
    Some(thrown.strip_prefix("Error: ").unwrap_or(thrown).to_owned())
}

/// The partition key header: the key as a JSON array. Non-ASCII characters are written as
/// `\u` escapes (as the Python SDK's `json.dumps` does), since a header value must be ASCII.
fn partition_key_header(key: &str) -> String {
    let json = serde_json::to_string(&[key]).expect("a string serializes");
    let mut header = String::with_capacity(json.len());
    for c in json.chars() {
        if c == ' ' || c.is_ascii_graphic() {
            header.push(c);
        } else {
            for unit in c.encode_utf16(&mut [0; 2]) {
                header.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    header
}

/// Percent-encodes as the Python SDK does (`quote(header, "-_.!~*'()")`).
fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Now, in the RFC 1123 form `x-ms-date` takes: `Tue, 01 Apr 2025 10:00:00 GMT`.
fn rfc1123_now() -> String {
    let format = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    time::OffsetDateTime::now_utc().format(&format).expect("the date formats")
}

/// Whether the endpoint's host is this machine: `localhost` or a loopback address.
fn is_loopback(url: &Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Cosmos DB answers a stored procedure's `throw new Error(number, message)`: a 400
    /// whose body embeds the message, with the number as `x-ms-substatus`. Built as reported by
    /// those who read it off the service (microsoft/fhir-server#449,
    /// `DocumentClientExceptionExtensions`; Azure/azure-cosmos-dotnet-v2#518, whose body this
    /// copies the shape of); not checked against a live account here.
    fn thrown_answer(substatus: Option<i64>, message: &str) -> Answer {
        let errors = serde_json::json!({"Errors": [format!(
            "Encountered exception while executing function. Exception = Error: {message}\r\nStack trace: Error: {message}\n   at remembered (script.js:40:13)"
        )]});
        let body = serde_json::json!({"code": "BadRequest", "message": format!("Message: {errors}\r\nActivityId: 1f2e, Request URI: /apps/x")});
        Answer {
            status: StatusCode::BAD_REQUEST,
            retry_after: None,
            substatus,
            body: body.to_string().into_bytes(),
        }
    }

    /// A script's throw is told apart by its substatus, as the in-process engine tells it by the
    /// Error's number: the same message without it is another throw.
    #[test]
    fn a_throw_is_classified_by_its_substatus() {
        let message = "createComment: a request with this key is in progress";
        let in_progress = failure(&thrown_answer(Some(crate::scripts::IN_PROGRESS), message));
        assert!(
            matches!(&in_progress, ScriptError::InProgress(thrown) if thrown == message),
            "{in_progress:?}"
        );
        let other = failure(&thrown_answer(None, message));
        assert!(matches!(&other, ScriptError::Thrown(thrown) if thrown == message), "{other:?}");
    }

    #[test]
    fn a_key_that_is_not_base64_signs_nothing() {
        let signed = ServerSideScripts::master_key_authorization(
            "GET",
            "dbs",
            "dbs/blog",
            "mon, 01 jan 2024 00:00:00 gmt",
            "not base64!",
        );
        assert_eq!(signed, Err(KeyNotBase64));
        assert!(
            ServerSideScripts::master_key_authorization("GET", "dbs", "dbs/blog", "d", "a2V5")
                .is_ok()
        );
    }
}
