//! An answer as the smoke test reads it, and what it makes of one. It says whether a deployment
//! that is still settling gave it (and so it is waited out), and how long to wait before the
//! next try. It also says whether it is the answer a step expects.

use std::time::Duration;

use serde_json::Value;

use super::{Failure, LONGEST_PAUSE, fail};

/// One answer, read whole.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) body: Value,
    pub(super) charge: String,
    pub(super) operations: String,
    pub(super) latency: Duration,
    /// What an earlier attempt of this request was answered when that answer does not say
    /// whether the attempt was done ("502 Bad Gateway", "no answer (…)"). Its retry carried the
    /// same Idempotency-Key, so the blog made it once either way. `None` when no attempt was in
    /// doubt.
    pub(super) unsure_attempt: Option<String>,
}

impl Answer {
    /// The problem's `detail`, or the body, to say why a request was refused.
    pub(super) fn why(&self) -> String {
        match (&self.body, self.body.get("detail").and_then(Value::as_str)) {
            (_, Some(detail)) => detail.to_owned(),
            (Value::String(text), None) if text.trim().is_empty() => "(no body)".to_owned(),
            (Value::String(text), None) => text.chars().take(300).collect(),
            (body, None) => body.to_string().chars().take(300).collect(),
        }
    }
}

/// An attempt answered the way a deployment answers while it settles (see [`settling`]).
pub(super) struct Unsettled {
    /// What it was answered, for the retry's line: "503 Service Unavailable", "no answer (…)".
    pub(super) said: String,
    /// What that means, for the same line.
    pub(super) meaning: &'static str,
    /// The request and its answer in full, for the failure when the bound has passed.
    pub(super) last: String,
    /// Whether the attempt may have been done anyway (see [`may_have_been_done`]).
    pub(super) maybe_done: bool,
}

/// What an answer with this status means when a deployment gives it while it settles; `None`
/// for the blog's own answer, which is final. `sign_in_settling`: whether 401/403 are still
/// taken as the sign-in settling (see [`Run::sign_in_settling`]). Every other 4xx (400, 404,
/// 409, 412, 422…) says the request itself is wrong, which no wait changes.
pub(super) fn settling(status: u16, sign_in_settling: bool) -> Option<&'static str> {
    match status {
        503 => Some("the app is still starting"),
        502 | 504 => Some("the front end got no answer from the app (starting, or restarting)"),
        500..=599 => {
            Some("the blog failed, as it does while its access to Cosmos DB is being granted")
        }
        408 => Some("the request timed out before the app took it"),
        429 => Some("too many requests for now"),
        401 | 403 if sign_in_settling => Some(
            "the sign-in is not accepted yet (a new app registration or role assignment takes minutes)",
        ),
        _ => None,
    }
}

/// Whether an attempt answered `status` may have been done anyway. A 5xx says the server
/// failed, not that it did nothing: the Functions host answers 502/504 for a worker that died or
/// timed out in the middle of a request. 401/403, 408 and 429 are refusals before any work.
pub(super) fn may_have_been_done(status: u16) -> bool {
    status >= 500
}

/// The pause after `pause`: twice as long, up to [`LONGEST_PAUSE`].
pub(super) fn next_pause(pause: Duration) -> Duration {
    (pause * 2).min(LONGEST_PAUSE)
}

/// `pause` and up to a tenth more, as `random` says: the usual guard against retries falling
/// into step with something periodic (other clients' retries, instances starting), and cheap.
pub(super) fn jittered(pause: Duration, random: u64) -> Duration {
    pause + pause.mul_f64((random % 1000) as f64 / 10_000.0)
}

/// A pause as the retry's line says it: whole seconds, or tenths below one.
pub(super) fn shown(pause: Duration) -> String {
    if pause >= Duration::from_secs(1) {
        format!("{:.0} s", pause.as_secs_f64())
    } else {
        format!("{:.1} s", pause.as_secs_f64())
    }
}

/// "503 Service Unavailable", or the number alone for a status without a name.
pub(super) fn status_text(status: u16) -> String {
    match reqwest::StatusCode::from_u16(status).ok().and_then(|code| code.canonical_reason()) {
        Some(reason) => format!("{status} {reason}"),
        None => status.to_string(),
    }
}

/// The innermost cause of an error: "Connection refused (os error 111)".
pub(super) fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// A request that got no answer, or only part of one: a refused connection never reached the
/// blog; a reset or timed-out one may have been done.
pub(super) fn no_answer(
    method: &reqwest::Method,
    path: &str,
    what: &str,
    error: &reqwest::Error,
) -> Unsettled {
    let meaning = match (error.is_connect(), error.is_timeout()) {
        (true, _) => "the app is not reachable yet",
        (false, true) => "the app did not answer in time",
        (false, false) => "the connection broke off",
    };
    Unsettled {
        said: format!("no answer ({})", root_cause(error)),
        meaning,
        last: format!("{method} {path} {what}: {}", blog::with_causes(error)),
        maybe_done: !error.is_connect(),
    }
}

/// The answer, if it is `expected` and the blog's (it carries the blog's measurements).
pub(super) fn checked(
    step: &str,
    method: &reqwest::Method,
    path: &str,
    answer: Answer,
    expected: u16,
) -> Result<Answer, Failure> {
    if answer.status != expected {
        return Err(fail(
            step,
            format!(
                "{method} {path} answered {} (expected {expected}): {}",
                answer.status,
                answer.why()
            ),
        ));
    }
    if answer.charge == "-" || answer.operations == "-" {
        return Err(fail(
            step,
            format!(
                "{method} {path} carries no x-ms-request-charge / x-cosmos-operations: is this the blog?"
            ),
        ));
    }
    Ok(answer)
}

/// Whether a list answer (`{items: [...]}`) holds an item with this id.
pub(super) fn lists(body: &Value, id: &str) -> bool {
    body["items"].as_array().is_some_and(|items| items.iter().any(|item| item["id"] == id))
}

/// Whether a search's page (Q8) finds the post `id`.
pub(super) fn finds(body: &Value, id: &str) -> bool {
    body["items"].as_array().is_some_and(|items| items.iter().any(|item| item["post"]["id"] == id))
}
