//! The handler's telemetry as it reaches Application Insights, and the workbook's and
//! the alerts' queries that read it.
//!
//! The Functions host logs each line a custom handler writes as one trace, its text the
//! `message` (azure-functions-host `WorkerProcess.BuildAndLogConsoleLog`, category
//! `Host.Function.Console`): a stdout line as information, a stderr line as an error, or a
//! warning when it says "warn" (`WorkerProcess.ParseErrorMessageAndLog` with
//! `HttpWorkerDescription.UseStdErrorStreamForErrorsOnly`). The queries in `infra/queries` find
//! a kind of line by its text (`message contains "blog::http: request "`) and read its fields
//! with `extract`. Here the real binary writes those lines, and every query's every `extract` is
//! run (with the `regex` crate, whose syntax is RE2's, as Kusto's is) on the lines of every kind
//! the query reads: a query that names a field the handler does not write fails here, not on
//! Azure.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::binary::Handler;
use regex::Regex;
use serde_json::{Value, json};

/// One query of `infra/queries`: the kinds of line it reads, and the fields it extracts.
struct Query {
    file: String,
    /// The texts of `message contains "…"`: each names a kind of line.
    kinds: Vec<String>,
    /// The patterns of `extract(@'…', 1, message)`.
    fields: Vec<Regex>,
}

fn queries() -> Vec<Query> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("infra/queries");
    let kind = Regex::new(r#"message contains "([^"]+)""#).unwrap();
    let field = Regex::new(r"extract\(@'((?:[^']|'')*)',\s*1,\s*message\)").unwrap();
    let mut queries: Vec<Query> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "kql"))
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let mut kinds: Vec<String> =
                kind.captures_iter(&text).map(|found| found[1].to_owned()).collect();
            kinds.sort();
            kinds.dedup();
            let fields = field
                .captures_iter(&text)
                .map(|found| {
                    Regex::new(&found[1].replace("''", "'"))
                        .unwrap_or_else(|error| panic!("{path:?}: {error}"))
                })
                .collect();
            Query { file: path.file_name().unwrap().to_string_lossy().into_owned(), kinds, fields }
        })
        .collect();
    queries.sort_by(|a, b| a.file.cmp(&b.file));
    assert!(queries.len() >= 10, "the workbook's and the alerts' queries: {}", queries.len());
    queries
}

/// Waits until a line of `lines` satisfies `wanted`, and returns it.
fn line_where(
    lines: &Arc<Mutex<Vec<String>>>,
    patience: Duration,
    wanted: impl Fn(&str) -> bool,
) -> String {
    let started = Instant::now();
    loop {
        if let Some(line) = lines.lock().unwrap().iter().find(|line| wanted(line)) {
            return line.clone();
        }
        assert!(started.elapsed() < patience, "no such line in {:#?}", lines.lock().unwrap());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The value of `name=` in a line, quotes removed.
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let at = line.find(&format!(" {name}="))? + name.len() + 2;
    let rest = &line[at..];
    Some(match rest.strip_prefix('"') {
        Some(quoted) => &quoted[..quoted.find('"')?],
        None => rest.split(' ').next()?,
    })
}

/// The lines of every kind the queries read, written by the real binary: a blog on the embedded
/// store with its own processors (requests, deliveries, the lag), and one whose change feed the
/// host delivers (a host invocation, a dead letter); the 429 from a blog whose SDK is throttled.
struct Written {
    /// Every line, stdout and stderr.
    lines: Vec<String>,
}

impl Written {
    fn of_kind(&self, kind: &str) -> Vec<&String> {
        self.lines.iter().filter(|line| line.contains(kind)).collect()
    }
}

const INVOCATION_ID: &str = "5f0c1a52-3f0e-4a4e-9a53-0d7f3c1e2b11";
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

async fn written_by_the_processors_blog(lines: &mut Vec<String>) {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let client = reqwest::Client::new();
    let write = |path: &str, body: Value| {
        client.post(format!("{}/api{path}", handler.base)).header("x-dev-user", "ada").json(&body)
    };
    assert_eq!(write("/users", json!({"username": "ada"})).send().await.unwrap().status(), 201);
    // A write, as the host forwards a client's request: its invocation id added, the client's
    // `traceparent` copied (azure-functions-host `DefaultHttpWorkerService.AddHeaders`,
    // `HttpRequestExtensions.ToHttpRequestMessage`). A write made has a line of its own.
    let post: Value = write("/posts", json!({"userId": "ada", "title": "t", "content": "c"}))
        .header("x-azure-functions-invocationid", INVOCATION_ID)
        .header("traceparent", format!("00-{TRACE_ID}-00f067aa0ba902b7-01"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let post_id = post["id"].as_str().unwrap();
    // A read, counted in its route's minute line (written when the handler stops).
    let read = client.get(format!("{}/api/posts/{post_id}", handler.base)).send().await.unwrap();
    assert_eq!(read.status(), 200);
    line_where(&handler.log, Duration::from_secs(20), |line| {
        line.contains("blog::changefeed: delivered ")
    });
    // The first `lag` line comes a few seconds after the start (`changefeed::lag::FIRST_REPORT_AFTER`).
    line_where(&handler.log, Duration::from_secs(30), |line| {
        line.contains("blog::changefeed: lag ")
    });
    let (log, errors) = (handler.log.clone(), handler.errors.clone());
    handler.stop();
    lines.extend(log.lock().unwrap().iter().cloned());
    lines.extend(errors.lock().unwrap().iter().cloned());
}

async fn written_by_the_hosts_blog(lines: &mut Vec<String>) {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[("BLOG_CHANGE_FEED", "host")]);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    // A post as the trigger delivers it, but without its author: never applicable, set aside.
    let malformed = json!({"id": "p1", "postId": "p1", "type": "post", "title": "t", "_ts": now - 42, "_lsn": 7});
    let body = common::host::cosmos_invocation(
        "PostsChangeFeed",
        &[malformed],
        common::host::Attempt::Retry(0),
    );
    // The headers of `DefaultHttpWorkerService.AddHeaders` (the body's framing, chunked there, is
    // `tests/host_requests.rs`'s concern).
    let answer = reqwest::Client::new()
        .post(format!("{}/PostsChangeFeed", handler.base))
        .header("content-type", "application/json; charset=utf-8")
        .header("x-azure-functions-hostversion", common::host::HOST_VERSION)
        .header("user-agent", format!("Azure-Functions-Host/{}", common::host::HOST_VERSION))
        .header("x-azure-functions-invocationid", INVOCATION_ID)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(
        answer.status(),
        200,
        "set aside and acknowledged: {}",
        answer.text().await.unwrap()
    );
    let (log, errors) = (handler.log.clone(), handler.errors.clone());
    handler.stop();
    lines.extend(log.lock().unwrap().iter().cloned());
    lines.extend(errors.lock().unwrap().iter().cloned());
}

/// Cosmos DB's 429, still there after the SDK's retries: a blog served in this process (the
/// SDK's fault injection is not in the binary), its lines written by the binary's own
/// [`blog::LineFormat`].
async fn written_when_throttled(lines: &mut Vec<String>) {
    use blog::test_support::sdk_faults::{
        CustomResponseBuilder, FaultInjectionConditionBuilder, FaultInjectionResultBuilder,
        FaultInjectionRuleBuilder, FaultOperationType,
    };
    use blog::test_support::{SdkFaults, embedded_config, store_with_sdk_faults};

    let throttled = CustomResponseBuilder::new(azure_core::http::StatusCode::TooManyRequests)
        .with_header("x-ms-retry-after-ms", "2500")
        .build();
    let condition = FaultInjectionConditionBuilder::new()
        .with_operation_type(FaultOperationType::ReadItem)
        .with_container_id("users")
        .build();
    let result = FaultInjectionResultBuilder::new().with_custom_response(throttled).build();
    let rule = Arc::new(
        FaultInjectionRuleBuilder::new("429 on reads of users", result)
            .with_condition(condition)
            .build(),
    );
    let data = tempfile::tempdir().unwrap();
    let config = embedded_config(data.path());
    let store =
        store_with_sdk_faults(&config, SdkFaults { rules: vec![rule], throttle_retries: Some(0) })
            .await
            .unwrap();
    let state = blog::state_on(&config, store).await.unwrap();

    let written = Arc::new(Mutex::new(Vec::<u8>::new()));
    let sink = written.clone();
    let subscriber = tracing_subscriber::fmt()
        .event_format(blog::LineFormat)
        .with_writer(move || Sink(sink.clone()))
        .with_max_level(tracing::Level::INFO)
        .finish();
    let read = {
        let _current = tracing::subscriber::set_default(subscriber);
        state.store.read::<Value>(blog::testing::cosmos::Container::Users, "ada", "ada").await
    };
    assert!(read.is_err(), "throttled: {read:?}");
    lines.extend(
        String::from_utf8(written.lock().unwrap().clone()).unwrap().lines().map(str::to_owned),
    );
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

async fn written() -> Written {
    let mut lines = Vec::new();
    written_by_the_processors_blog(&mut lines).await;
    written_by_the_hosts_blog(&mut lines).await;
    written_when_throttled(&mut lines).await;
    Written { lines }
}

/// The fields of a request, a delivery, a dead letter, the lag and a 429, as the handler writes
/// them; then every query against them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handlers_lines_carry_what_the_operations_read() {
    let written = written().await;

    let request = written
        .of_kind("blog::http: request ")
        .into_iter()
        .find(|line| field(line, "invocation_id").is_some())
        .unwrap_or_else(|| panic!("a forwarded request's line: {:#?}", written.lines))
        .clone();
    assert_eq!(field(&request, "route"), Some("/api/posts"), "{request}");
    assert_eq!(field(&request, "status"), Some("201"), "{request}");
    assert_eq!(field(&request, "invocation_id"), Some(INVOCATION_ID), "{request}");
    assert_eq!(field(&request, "trace_id"), Some(TRACE_ID), "{request}");
    for name in ["method", "ru", "operations", "partitions", "latency_ms"] {
        assert!(field(&request, name).is_some(), "{name} in {request}");
    }
    assert!(request.contains(" INFO "), "information, on stdout: {request}");

    let minute = written
        .of_kind("blog::http: requests ")
        .into_iter()
        .find(|line| field(line, "route") == Some("/api/posts/{postId}"))
        .unwrap_or_else(|| panic!("the read's minute line: {:#?}", written.lines))
        .clone();
    assert_eq!(field(&minute, "count"), Some("1"), "{minute}");
    assert_eq!(field(&minute, "status_2xx"), Some("1"), "{minute}");
    for name in [
        "method",
        "status_5xx",
        "ru",
        "operations",
        "latency_p50_ms",
        "latency_p95_ms",
        "latency_p99_ms",
        "latency_max_ms",
    ] {
        assert!(field(&minute, name).is_some(), "{name} in {minute}");
    }
    assert!(minute.contains(" INFO "), "information, on stdout: {minute}");

    let delivered = written.of_kind("blog::changefeed: delivered ");
    let by_processor = delivered
        .iter()
        .find(|line| field(line, "invocation_id").is_none())
        .expect("a processor's delivery");
    for name in
        ["function", "count", "applied", "ignored", "set_aside", "ru", "operations", "oldest_age_s"]
    {
        assert!(field(by_processor, name).is_some(), "{name} in {by_processor}");
    }
    let by_host = delivered
        .iter()
        .find(|line| field(line, "invocation_id").is_some())
        .expect("the host's delivery");
    assert_eq!(field(by_host, "set_aside"), Some("1"), "{by_host}");
    let age: u64 = field(by_host, "oldest_age_s").unwrap().parse().unwrap();
    assert!((42..3600).contains(&age), "the change was written 42 s ago by its _ts: {by_host}");

    let dead_letter = written.of_kind("blog::changefeed: set aside");
    let dead_letter = dead_letter.first().expect("the dead letter's line");
    assert!(
        dead_letter.contains("ERROR "),
        "an error, on stderr, which the host logs as one: {dead_letter}"
    );
    for name in ["function", "what", "reason", "dead_letter"] {
        assert!(field(dead_letter, name).is_some(), "{name} in {dead_letter}");
    }

    let lag = written.of_kind("blog::changefeed: lag ");
    assert!(lag.iter().any(|line| field(line, "function") == Some("PostsChangeFeed")), "{lag:?}");
    assert!(
        lag.iter()
            .all(|line| field(line, "changes").is_some() && field(line, "oldest_age_s").is_some()),
        "{lag:?}"
    );

    let throttled = written.of_kind("blog::cosmos: throttled");
    let throttled = throttled.first().unwrap_or_else(|| panic!("{:#?}", written.lines));
    assert!(throttled.contains(" WARN "), "a warning: {throttled}");
    assert_eq!(field(throttled, "status"), Some("429"), "{throttled}");

    // What `handler cost` prices Application Insights with: no line is longer than its bound.
    for (kind, bound) in [
        ("blog::http: requests ", blog::BILLED_LINES.minute),
        ("blog::http: request ", blog::BILLED_LINES.request),
        ("blog::changefeed: delivered ", blog::BILLED_LINES.delivered),
        ("blog::changefeed: lag ", blog::BILLED_LINES.lag),
    ] {
        let lines = written.of_kind(kind);
        assert!(!lines.is_empty(), "{kind}");
        for line in lines {
            assert!(
                line.len() <= bound,
                "{kind}: {} bytes, over the {bound} `handler cost` prices: {line}",
                line.len()
            );
        }
    }

    for query in queries() {
        assert!(
            !query.kinds.is_empty() || query.fields.is_empty(),
            "{}: extracts from lines it does not name",
            query.file
        );
        let mut read = Vec::new();
        for kind in &query.kinds {
            let lines = written.of_kind(kind);
            assert!(!lines.is_empty(), "{}: no line of the handler contains {kind:?}", query.file);
            read.extend(lines);
        }
        // A query that reads two kinds of line may take a field from one kind only
        // (failures.kql: `status_5xx` from the minute lines, `status` from the 429s).
        for pattern in &query.fields {
            assert!(
                read.iter()
                    .any(|line| pattern.captures(line).is_some_and(|found| found.get(1).is_some())),
                "{}: `extract(@'{pattern}')` finds nothing in the handler's {:?} lines: {read:#?}",
                query.file,
                query.kinds
            );
        }
    }
}

/// The Functions host keeps every trace (the handler's lines) from adaptive sampling, which it
/// otherwise applies at 20 items a second (azure-functions-host `ApplicationInsightsLoggerOptionsSetup.
/// Configure`; `ExcludedTypes` read from `logging.applicationInsights.samplingSettings`): the
/// workbook's sums of request units and the alerts' counts are then the whole. And it logs the
/// handler's lines (`Host.Function.Console`) at information, which `Function` does not cover.
#[test]
fn host_json_keeps_the_handlers_lines_whole() {
    let host: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("host.json")).unwrap(),
    )
    .unwrap();
    let sampling = &host["logging"]["applicationInsights"]["samplingSettings"];
    let excluded: Vec<&str> =
        sampling["excludedTypes"].as_str().unwrap_or_default().split(';').collect();
    assert!(sampling["isEnabled"] == json!(false) || excluded.contains(&"Trace"), "{sampling}");
    assert_eq!(host["logging"]["logLevel"]["Host.Function.Console"], "Information");
}

/// Every query of the workbook and the alerts parses, and names only tables, columns and
/// functions of Application Insights, by Microsoft's own Kusto parser (Kusto.Language, from npm:
/// `tests/kql/check.sh`, which installs it). Without npm, says so, and fails under CI (`CI` set).
#[test]
fn every_query_is_kusto_that_application_insights_can_run() {
    if std::process::Command::new("npm").arg("--version").output().is_err() {
        let message = "npm is not installed: the workbook's and the alerts' queries were not checked with Kusto.Language";
        assert!(std::env::var_os("CI").is_none(), "{message}");
        eprintln!("warning: {message}");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let queries: Vec<Value> = queries()
        .iter()
        .map(|query| {
            let text =
                std::fs::read_to_string(root.join("infra/queries").join(&query.file)).unwrap();
            json!({"name": query.file, "query": text})
        })
        .collect();
    let list = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(list.path(), serde_json::to_vec(&queries).unwrap()).unwrap();
    let checked = std::process::Command::new(root.join("tests/kql/check.sh"))
        .arg(list.path())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    assert!(checked.status.success(), "Kusto.Language finds errors:\n{said}");
    assert!(said.contains(&format!("{} queries: no errors", queries.len())), "{said}");
}
