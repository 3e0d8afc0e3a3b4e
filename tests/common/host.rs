//! Requests as the Azure Functions host sends them to a custom handler, built the way the host's
//! source builds them (Azure/azure-functions-host, `src/WebJobs.Script/Workers/Http/
//! DefaultHttpWorkerService.cs` and `Workers/MessageExtensions/*`), sent over a raw connection so
//! that the framing (chunked bodies, absent `Content-Length`) is the host's too.

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{Answer, TestApp};

/// The host version the fixtures claim (any 4.x host behaves as below).
pub(crate) const HOST_VERSION: &str = "4.1036.1.1";

/// Which attempt of an invocation: the host adds `RetryContext` whenever the function has a
/// retry policy, from the first attempt on, with `RetryCount` 0 (azure-webjobs-sdk
/// `FunctionExecutorExtensions.TryExecuteAsync`; host `ScriptInvocationContextExtensions.
/// SetRetryContext`). Ours have `maxRetryCount: -1`.
pub(crate) enum Attempt {
    NoRetryPolicy,
    Retry(u32),
}

/// The body of a Cosmos DB trigger invocation of `function` with `documents`.
///
/// `Data.documents`: the extension binds the batch for a custom handler as a string, the compact
/// JSON of the array (azure-webjobs-sdk-extensions `CosmosDBTriggerValueBinder.GetValueAsync`:
/// `jArray.ToString(Formatting.None)`); the host's `GetHttpScriptInvocationContextValue` then
/// fails `JObject.FromObject` on that string and falls back to `JsonConvert.SerializeObject`,
/// which encodes it again (host `ScriptInvocationContextExtensionsTests.
/// GetHttpScriptInvocationContextValueTest_String` expects `"\"value\""`).
///
/// `Metadata`: the Cosmos DB trigger has an empty binding data contract
/// (`CosmosDBTriggerBinding.BindingDataContract`), so only `sys` (`SystemBindingData`:
/// `MethodName`, `UtcNow`, `RandGuid`), and `RetryContext` with a retry policy.
pub(crate) fn cosmos_invocation(function: &str, documents: &[Value], attempt: Attempt) -> Vec<u8> {
    let bound = serde_json::to_string(documents).unwrap(); // the extension's string
    let data_value = Value::String(bound).to_string(); // the host's SerializeObject of it
    let mut metadata = json!({"sys": {
        "MethodName": function,
        "UtcNow": "2026-11-23T12:00:00.1234567Z",
        "RandGuid": "0b9d8e1c-8a53-4a8f-9d0e-3c2f1a7b6e55",
    }});
    if let Attempt::Retry(count) = attempt {
        let exception = (count > 0).then(|| {
            json!({
                "ClassName": "Microsoft.Azure.WebJobs.Host.FunctionInvocationException",
                "Message": format!("Exception while executing function: Functions.{function}"),
                "InnerException": {"ClassName": "System.Net.Http.HttpRequestException",
                    "Message": "Response status code does not indicate success: 500 (Internal Server Error)."},
            })
        });
        metadata["RetryContext"] = json!({"RetryCount": count, "MaxRetryCount": -1, "Exception": exception, "Instance": null, "State": {}});
    }
    json!({"Data": {"documents": data_value}, "Metadata": metadata}).to_string().into_bytes()
}

/// The body of the timer function's invocation (`functions/PublishScheduled`, binding `timer`),
/// as the host builds it: `Data.timer` is `JObject.FromObject(TimerInfo)` (azure-functions-host
/// `ScriptInvocationContextExtensions.GetHttpScriptInvocationContextValue`; the timer binding's
/// type is `TimerInfo`, `CoreExtensionsScriptBindingProvider.TimerTriggerScriptBinding`), whose
/// properties are `Schedule` (a `CronSchedule`: only `AdjustForDST`), `ScheduleStatus` (`Last`,
/// `Next`, `LastUpdated`, local times: UTC on Azure, written with their offset) and `IsPastDue`
/// (azure-webjobs-sdk-extensions `TimerInfo`, `ScheduleStatus`, `TimerListener.
/// InvokeJobFunction`). `Metadata` holds `sys` alone: the binding's own data, `TimerTrigger`,
/// ends in "trigger" and is dropped (`ToHttpScriptInvocationContext`).
pub(crate) fn timer_invocation(past_due: bool) -> Vec<u8> {
    let next = if past_due { "2026-11-23T11:42:00+00:00" } else { "2026-11-23T12:01:00+00:00" };
    json!({
        "Data": {"timer": {
            "Schedule": {"AdjustForDST": true},
            "ScheduleStatus": {
                "Last": "2026-11-23T11:41:00.0123456+00:00",
                "Next": next,
                "LastUpdated": "2026-11-23T11:41:00.0123456+00:00",
            },
            "IsPastDue": past_due,
        }},
        "Metadata": {"sys": {
            "MethodName": "PublishScheduled",
            "UtcNow": "2026-11-23T12:07:00.0156789Z",
            "RandGuid": "9b0e7f0a-2c55-4b3e-bf1d-0f8a3f5e6d21",
        }},
    })
    .to_string()
    .into_bytes()
}

/// `POST /{function}` as the host invokes a non-HTTP function: `ObjectContent` with
/// `JsonMediaTypeFormatter`, which cannot tell its length, so the body is chunked; the headers of
/// `DefaultHttpWorkerService.AddHeaders`.
pub(crate) async fn invoke(app: &TestApp, function: &str, body: &[u8]) -> Answer {
    let head = format!(
        "POST /{function} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json; charset=utf-8\r\n\
         Transfer-Encoding: chunked\r\nX-Azure-Functions-HostVersion: {HOST_VERSION}\r\n\
         X-Azure-Functions-InvocationId: 5f0c1a52-3f0e-4a4e-9a53-0d7f3c1e2b11\r\n\
         User-Agent: Azure-Functions-Host/{HOST_VERSION}\r\nConnection: close\r\n\r\n",
        host = authority(app),
    );
    let mut request = head.into_bytes();
    // Two chunks, so that nothing relies on the body arriving in one piece.
    let middle = body.len() / 2;
    for chunk in [&body[..middle], &body[middle..]] {
        request.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        request.extend_from_slice(chunk);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    exchange(app, &request).await
}

/// A client's request as the host forwards it to the handler (`enableForwardingHttpRequest`):
/// the path as the client sent it (the route prefix is empty: `/api/...` for the API, `/...` for
/// the pages); the query is rebuilt from the parsed one, so a repeated key
/// arrives once with its values joined by commas (`a=1%2C2`); every header is copied and the
/// host adds `X-Azure-Functions-HostVersion`, `X-Azure-Functions-InvocationId` and its token at
/// the end of `User-Agent`; the body is copied only when the client's `Content-Length` is above
/// 0, and with it `Content-Type` and `Content-Length` (a chunked client request arrives without
/// its body, its `Transfer-Encoding` header still copied).
///
/// `body`: `None` for a request whose body did not come through (a GET, or a chunked client
/// request), `Some` for one the client sent with a `Content-Length`.
pub(crate) async fn forward(
    app: &TestApp,
    method: &str,
    path_and_query: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Answer {
    let mut head = format!(
        "{method} {path_and_query} HTTP/1.1\r\nHost: blog.azurewebsites.net\r\n\
         X-Azure-Functions-HostVersion: {HOST_VERSION}\r\nX-Azure-Functions-InvocationId: 9a1f0c2e-77b4-4f0e-8c1d-2b3a4c5d6e7f\r\n\
         X-Forwarded-Proto: https\r\nX-Forwarded-For: 203.0.113.7:51234\r\nConnection: close\r\n"
    );
    let mut user_agent = format!("Azure-Functions-Host/{HOST_VERSION}");
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("user-agent") {
            user_agent = format!("{value} {user_agent}");
            continue;
        }
        // The host sends content headers only with a body.
        if name.eq_ignore_ascii_case("content-type") && body.is_none_or(<[u8]>::is_empty) {
            continue;
        }
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("User-Agent: {user_agent}\r\n"));
    // A POST or PUT without a body goes out with `Content-Length: 0` (.NET's HttpClient).
    if let Some(body) = body {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    let body = body.unwrap_or_default();
    head.push_str("\r\n");
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    exchange(app, &request).await
}

/// The App Service Authentication headers of a signed-in caller: `X-MS-CLIENT-PRINCIPAL` (base64
/// of the claims, as the host's `SamplesEndToEndTests_CSharp` builds it) and the `-ID`, `-NAME`
/// and `-IDP` headers, which the host only passes on.
pub(crate) fn signed_in(principal_id: &str) -> Vec<(&'static str, String)> {
    use base64::Engine;
    let claims = json!({
        "auth_typ": "aad",
        "claims": [
            {"typ": "http://schemas.microsoft.com/identity/claims/objectidentifier", "val": principal_id},
            {"typ": "name", "val": "Alice"},
        ],
        "name_typ": "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name",
        "role_typ": "http://schemas.microsoft.com/ws/2008/06/identity/claims/role",
    });
    vec![
        (
            "X-MS-CLIENT-PRINCIPAL",
            base64::engine::general_purpose::STANDARD.encode(claims.to_string()),
        ),
        ("X-MS-CLIENT-PRINCIPAL-ID", principal_id.to_owned()),
        ("X-MS-CLIENT-PRINCIPAL-NAME", "alice@example.com".to_owned()),
        ("X-MS-CLIENT-PRINCIPAL-IDP", "aad".to_owned()),
    ]
}

fn authority(app: &TestApp) -> &str {
    app.base.trim_start_matches("http://")
}

/// Sends raw bytes, reads the whole answer (the request asked to close the connection).
async fn exchange(app: &TestApp, request: &[u8]) -> Answer {
    let mut stream = tokio::net::TcpStream::connect(authority(app)).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    parse_response(&response)
}

fn parse_response(bytes: &[u8]) -> Answer {
    let split = bytes.windows(4).position(|window| window == b"\r\n\r\n").expect("a response head");
    let head = std::str::from_utf8(&bytes[..split]).unwrap();
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let mut headers = HeaderMap::new();
    for line in lines {
        let (name, value) = line.split_once(':').unwrap();
        headers.append(
            HeaderName::from_bytes(name.trim().as_bytes()).unwrap(),
            HeaderValue::from_str(value.trim()).unwrap(),
        );
    }
    let mut body = bytes[split + 4..].to_vec();
    if headers.get("transfer-encoding").is_some_and(|value| value == "chunked") {
        body = dechunk(&body);
    }
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body)
            .unwrap_or(Value::String(String::from_utf8_lossy(&body).into()))
    };
    Answer { status: StatusCode::from_u16(status).unwrap(), headers, body }
}

fn dechunk(mut bytes: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let line_end = bytes.windows(2).position(|window| window == b"\r\n").unwrap();
        let size =
            usize::from_str_radix(std::str::from_utf8(&bytes[..line_end]).unwrap().trim(), 16)
                .unwrap();
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&bytes[line_end + 2..line_end + 2 + size]);
        bytes = &bytes[line_end + 2 + size + 2..];
    }
}
