//! Each failure says what it found from its data, and its cause once, as its source.

use std::time::Duration;

use super::ScriptFailure;
use crate::scripts::ScriptError;
use crate::scripts::server_side::KeyNotBase64;

/// The failure as a log line reports it: the script's error, then each cause.
fn report(failure: ScriptFailure) -> String {
    crate::logging::with_causes(&ScriptError::Failed(failure))
}

fn not_json() -> serde_json::Error {
    serde_json::from_str::<serde_json::Value>("{").unwrap_err()
}

#[test]
fn a_script_past_its_time_says_the_time_it_had() {
    let report = report(ScriptFailure::DidNotFinish { limit: Duration::from_secs(5) });
    assert_eq!(report, "the script failed: the script did not finish within 5s");
}

#[test]
fn a_script_out_of_memory_says_the_memory_it_had() {
    let report = report(ScriptFailure::OutOfMemory { limit_bytes: 1024 });
    assert_eq!(report, "the script failed: the script ran out of memory (limit 1024 bytes)");
}

#[test]
fn a_script_that_does_not_compile_says_the_engine_s_message() {
    let report = report(ScriptFailure::DoesNotCompile {
        message: "unexpected token in expression: '{'".into(),
    });
    assert_eq!(
        report,
        "the script failed: the script does not compile: unexpected token in expression: '{'"
    );
}

#[test]
fn a_missing_function_is_named() {
    let report = report(ScriptFailure::NoFunction { function: "main".into() });
    assert_eq!(report, "the script failed: the script defines no function named 'main'");
}

#[test]
fn the_engine_s_own_failure_is_its_source() {
    let report = report(ScriptFailure::Engine(rquickjs::Error::Unknown));
    assert!(report.starts_with("the script failed: the script engine failed: "), "{report}");
}

#[tokio::test]
async fn a_thread_that_died_keeps_how_it_ended_as_its_source() {
    let ended = tokio::spawn(async { panic!("the thread's own words") }).await.unwrap_err();
    let report = report(ScriptFailure::ThreadDied(ended));
    assert!(
        report.starts_with("the script failed: the script's thread did not finish: "),
        "{report}"
    );
    assert_eq!(report.matches("panicked").count(), 1, "{report}");
}

#[test]
fn an_unknown_operation_is_named() {
    let report = report(ScriptFailure::UnknownOperation { operation: "merge".into() });
    assert_eq!(report, "the script failed: the script asked for an unknown operation \"merge\"");
}

#[test]
fn a_body_that_is_not_json_keeps_the_parser_s_words_as_source() {
    let failure = ScriptFailure::BodyNotJson { script: "createLike".into(), source: not_json() };
    let parser = not_json().to_string();
    let report = report(failure);
    assert_eq!(
        report,
        format!("the script failed: createLike answered a body that is not JSON: {parser}")
    );
}

#[test]
fn a_script_that_wrote_its_request_record_is_named_with_the_record() {
    let report =
        report(ScriptFailure::WroteItsRequest { script: "createComment", id: "request-k1".into() });
    assert_eq!(
        report,
        "the script failed: createComment wrote the document its request writes (request-k1)"
    );
}

#[test]
fn a_trigger_on_a_delete_says_when_triggers_run() {
    let report = report(ScriptFailure::TriggerOnDelete);
    assert_eq!(
        report,
        "the script failed: a post-trigger runs after a create, replace or upsert, not a delete"
    );
}

#[test]
fn what_does_not_serialize_is_named() {
    let parser = not_json().to_string();
    let report =
        report(ScriptFailure::NotSerializable { what: "the arguments", source: not_json() });
    assert_eq!(report, format!("the script failed: the arguments do not serialize: {parser}"));
}

#[test]
fn a_key_that_cannot_sign_keeps_why_as_its_source() {
    let report = report(ScriptFailure::Key(KeyNotBase64));
    assert_eq!(
        report,
        "the script failed: the account key cannot sign the call: the Cosmos DB account key is not valid base64"
    );
}

#[test]
fn a_missing_token_keeps_the_credential_s_error_as_its_source() {
    let error = azure_core::Error::with_message(
        azure_core::error::ErrorKind::Credential,
        "no managed identity here",
    );
    let report = report(ScriptFailure::NoToken(error));
    assert!(report.starts_with("the script failed: no Entra ID token for Cosmos DB: "), "{report}");
    assert_eq!(report.matches("no managed identity here").count(), 1, "{report}");
}

#[tokio::test]
async fn no_answer_keeps_the_connection_s_error_as_its_source() {
    // A port nothing listens on: refused at once.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let error = reqwest::Client::new().get(format!("http://{address}/")).send().await.unwrap_err();
    let report = report(ScriptFailure::NoAnswer(error));
    assert!(report.starts_with("the script failed: Cosmos DB did not answer: "), "{report}");
}

#[test]
fn a_refusal_says_cosmos_db_s_status_with_its_message() {
    let report =
        report(ScriptFailure::Refused { status: 403, message: "Request blocked by Auth".into() });
    assert_eq!(report, "the script failed: Cosmos DB answered 403: Request blocked by Auth");
}

#[test]
fn an_unknown_answer_names_where_it_came_from() {
    let in_post = ScriptFailure::Answered {
        script: "deletePost",
        post_id: Some("p1".into()),
        answer: "Forbidden".into(),
    };
    assert_eq!(report(in_post), "the script failed: deletePost answered Forbidden in post p1");
    let anywhere = ScriptFailure::Answered {
        script: "createLike",
        post_id: None,
        answer: r#"{"outcome":"maybe"}"#.into(),
    };
    assert_eq!(report(anywhere), r#"the script failed: createLike answered {"outcome":"maybe"}"#);
}
