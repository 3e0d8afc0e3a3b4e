//! The server the binary runs (`main` → `Blog::serve`): a connection that sends no request is
//! closed after the header timeout, and sockets that send nothing cannot take the server's file
//! descriptors from everyone else.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::binary::Handler;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Reads until the server closes the connection; `false` if it is still open after `patience`.
async fn closed_within(stream: &mut TcpStream, patience: Duration) -> bool {
    let mut rest = Vec::new();
    tokio::time::timeout(patience, stream.read_to_end(&mut rest)).await.is_ok()
}

/// docs/configuration.md: "a connection has 30 s to send a request's headers or its next request" (the
/// default, `BLOG_HEADER_TIMEOUT`; src/config.rs holds the 30 s). A trickled request, a silent
/// socket and an idle kept-alive connection are all closed by the handler as `main` starts it,
/// here with a 2 s timeout so that the test does not wait 30 s. The patience is past the 2 s, not
/// a measure of speed.
#[tokio::test]
async fn a_connection_without_a_whole_request_is_closed_after_the_header_timeout() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[("BLOG_HEADER_TIMEOUT", "2")]);
    let mut trickled = TcpStream::connect(handler.address()).await.unwrap();
    trickled.write_all(b"GET /api/feed HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    let mut silent = TcpStream::connect(handler.address()).await.unwrap();
    let mut kept_alive = TcpStream::connect(handler.address()).await.unwrap();
    kept_alive.write_all(b"GET /api/feed HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut answer = [0u8; 12];
    kept_alive.read_exact(&mut answer).await.unwrap();
    assert_eq!(&answer, b"HTTP/1.1 200");

    let patience = Duration::from_secs(20);
    let (trickled, silent, kept_alive) = tokio::join!(
        closed_within(&mut trickled, patience),
        closed_within(&mut silent, patience),
        closed_within(&mut kept_alive, patience)
    );
    assert!(trickled, "a request whose headers never end is cut off");
    assert!(silent, "a socket that never sends a request is closed");
    assert!(kept_alive, "an idle kept-alive connection is closed");
}

/// Under a limit of 256 open files, 400 sockets that send nothing are opened before anyone
/// else asks: the reads of everyone else are still answered, long before any header timeout,
/// because the server closes the longest-silent connection to make room, and the silent
/// sockets are the ones that go.
#[tokio::test]
async fn silent_sockets_past_the_descriptor_limit_do_not_take_reads_down() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start_with_descriptor_limit(data.path(), 256);
    let mut silent = Vec::new();
    for _ in 0..400 {
        silent.push(TcpStream::connect(handler.address()).await.unwrap());
    }
    // Well under the 30 s header timeout: an answer here did not wait for silent sockets to expire.
    let client = reqwest::Client::builder().timeout(Duration::from_secs(15)).build().unwrap();
    for path in ["/api/feed", "/", "/api/feed?limit=5"] {
        let answer = client
            .get(format!("{}{path}", handler.base))
            .send()
            .await
            .unwrap_or_else(|error| panic!("{path}: {error}"));
        assert_eq!(answer.status(), 200, "{path}");
    }
    // The first silent sockets were the ones closed to make room.
    assert!(
        closed_within(&mut silent[0], Duration::from_secs(15)).await,
        "the longest-silent socket was closed"
    );
}

/// docs/configuration.md: at `info`, a read that went well is counted in its route's line of the minute,
/// a write made (and a 5xx, and a slow answer) has a line of its own; lines are written to
/// stdout by a thread of their own. As `main` sets the log up: the lines are in the layout of
/// the other lines (`tracing-subscriber`'s, without colour), and what is still in memory when
/// the handler is stopped in order (SIGTERM: a service manager, a container's stop), the minute
/// under way included, is written before it exits. (The Functions host kills its worker
/// instead, with SIGKILL: see `shutdown_signal` in `src/bin/handler/main.rs`.)
#[tokio::test]
async fn no_request_line_is_lost_when_the_worker_is_stopped() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let client = reqwest::Client::new();
    let created = client
        .post(format!("{}/api/users", handler.base))
        .header("x-dev-user", "ada")
        .json(&serde_json::json!({"username": "ada"}));
    assert_eq!(created.send().await.unwrap().status(), 201);
    let line_of = |log: &[String], route: &str| {
        log.iter()
            .find(|line| line.contains(&format!("request method=POST route=\"{route}\"")))
            .cloned()
    };
    let started = std::time::Instant::now();
    let write = loop {
        if let Some(line) = line_of(&handler.log.lock().unwrap(), "/api/users") {
            break line;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no line for POST /api/users: {:?}",
            handler.log.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let (time, rest) = write.split_once(' ').unwrap();
    assert!(
        time::OffsetDateTime::parse(time, &time::format_description::well_known::Rfc3339).is_ok(),
        "{write}"
    );
    let fields =
        rest.strip_prefix(" INFO blog::http: request ").unwrap_or_else(|| panic!("{write}"));
    let names: Vec<&str> =
        fields.split(' ').map(|field| field.split_once('=').unwrap().0).collect();
    assert_eq!(
        names,
        ["method", "route", "status", "ru", "operations", "partitions", "latency_ms"],
        "{write}"
    );
    assert!(fields.contains(" status=201 "), "{write}");

    // Reads, then SIGTERM at once: the minute's counts are in the log when the process has exited.
    assert_eq!(client.get(format!("{}/", handler.base)).send().await.unwrap().status(), 200);
    for n in 0..50 {
        client.get(format!("{}/api/users/nobody-{n}", handler.base)).send().await.unwrap();
    }
    let log = handler.log.clone();
    assert!(tokio::task::spawn_blocking(move || handler.stop()).await.unwrap().success());
    let log = log.lock().unwrap();
    assert!(
        !log.iter().any(|line| line.contains("request method=GET")),
        "no read has a line of its own: {log:?}"
    );
    let minute = |route: &str| {
        let wanted = format!("requests method=GET route=\"{route}\" ");
        log.iter()
            .find(|line| line.contains(&wanted))
            .cloned()
            .unwrap_or_else(|| panic!("no minute line for {route}: {log:?}"))
    };
    let users = minute("/api/users/{userId}");
    assert!(
        users.contains(" count=50 status_2xx=0 status_3xx=0 status_4xx=50 status_5xx=0 "),
        "{users}"
    );
    let front = minute("/");
    let fields =
        front.split_once(" INFO blog::http: requests ").unwrap_or_else(|| panic!("{front}")).1;
    let names: Vec<&str> =
        fields.split(' ').map(|field| field.split_once('=').unwrap().0).collect();
    assert_eq!(
        names,
        [
            "method",
            "route",
            "count",
            "status_2xx",
            "status_3xx",
            "status_4xx",
            "status_5xx",
            "ru",
            "operations",
            "latency_p50_ms",
            "latency_p95_ms",
            "latency_p99_ms",
            "latency_max_ms",
            "seconds"
        ],
        "{front}"
    );
    assert!(front.contains(" count=1 status_2xx=1 "), "{front}");
    assert!(log.iter().any(|line| line.contains("INFO handler: shutting down")), "{log:?}");
}

/// `RUST_LOG=blog::http=debug` gives every request its own line again, reads included.
#[tokio::test]
async fn at_debug_every_request_has_its_own_line() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[("RUST_LOG", "info,blog::http=debug")]);
    let client = reqwest::Client::new();
    for n in 0..5 {
        client.get(format!("{}/api/users/nobody-{n}", handler.base)).send().await.unwrap();
    }
    let log = handler.log.clone();
    handler.stop();
    let log = log.lock().unwrap();
    let own = log
        .iter()
        .filter(|line| {
            line.contains(
                "DEBUG blog::http: request method=GET route=\"/api/users/{userId}\" status=404",
            )
        })
        .count();
    assert_eq!(own, 5, "{log:?}");
}

/// An instance writes at most 60 requests' own lines a minute, whatever it is sent: the others
/// are counted, and said to be left out.
#[tokio::test]
async fn requests_own_lines_are_bounded_by_the_minute() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let client = reqwest::Client::new();
    for n in 0..70 {
        let user = format!("writer-{n}");
        let created = client
            .post(format!("{}/api/users", handler.base))
            .header("x-dev-user", &user)
            .json(&serde_json::json!({"username": user}));
        assert_eq!(created.send().await.unwrap().status(), 201);
    }
    let log = handler.log.clone();
    handler.stop();
    let log = log.lock().unwrap();
    let own =
        log.iter().filter(|line| line.contains("INFO blog::http: request method=POST")).count();
    assert_eq!(own, 60, "{log:?}");
    assert!(
        log.iter().any(|line| line
            .contains("requests method=POST route=\"/api/users\" count=70 status_2xx=70 ")),
        "{log:?}"
    );
    let left_out = log
        .iter()
        .find(|line| line.contains("requests' own lines left out"))
        .unwrap_or_else(|| panic!("{log:?}"));
    assert!(left_out.contains(" left_out=10 limit=60 "), "{left_out}");
}

/// While serving, warnings and errors are written to stderr and the rest to stdout,
/// as the Functions host reads a custom handler's streams (azure-functions-host
/// `WorkerProcess.ParseErrorMessageAndLog`: a stderr line is logged as an error, or a warning
/// where it says "warn"; a stdout line as information), so that they reach Application Insights
/// at their level. The warning here: the picture store cannot be reached.
#[tokio::test]
async fn problems_are_written_to_stderr_the_rest_to_stdout() {
    let data = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let key =
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
    let unreachable = format!(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={key};BlobEndpoint=http://127.0.0.1:{port}/devstoreaccount1;"
    );
    let handler = Handler::start(data.path(), &[("BLOG_PICTURES", &unreachable)]);
    let client = reqwest::Client::new();
    let as_writer = |request: reqwest::RequestBuilder| request.header("x-dev-user", "w");
    let post = handler.writers_post("w").await;
    let path = format!("/api/posts/{post}/pictures");
    let refused = as_writer(client.post(format!("{}{path}", handler.base)))
        .header("content-type", "image/png");
    // A real picture: the store is asked only once the picture is taken.
    let png = common::noise_png(4, 1);
    assert_eq!(refused.body(png).send().await.unwrap().status(), 503);
    let log = handler.log.clone();
    let errors = handler.errors.clone();
    handler.stop();
    let (log, errors) = (log.lock().unwrap(), errors.lock().unwrap());
    let warned = errors
        .iter()
        .find(|line| line.contains("the picture store is unavailable"))
        .unwrap_or_else(|| panic!("{errors:?}"));
    assert!(warned.contains(" WARN "), "the host reads \"warn\" in it as a warning: {warned}");
    assert!(
        !log.iter().any(|line| line.contains(" WARN ") || line.contains("ERROR ")),
        "no warning or error on stdout: {log:?}"
    );
    assert!(
        log.iter().any(|line| line.contains("route=\"/api/posts/{postId}/pictures\" status=503")),
        "{log:?}"
    );
}
