//! `handler smoke` against the real binary, started as `cargo run` starts it: it passes on a
//! working blog (twice in a row: its user stays, what it wrote goes), and fails, naming the
//! missing copy, when nothing delivers the change feed. Behind a [`Proxy`] that answers as a new
//! deployment does while it settles, it waits that out, and gives up, naming the step, when the
//! blog does not settle within `--settle`.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashSet;
use std::convert::Infallible;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::binary::Handler;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, Response};
use hyper_util::rt::TokioIo;

/// `handler smoke <args>`, run to its end.
fn smoke(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_handler"))
        .arg("smoke")
        .args(args)
        .env_remove("BLOG_SMOKE_TOKEN")
        .env("NO_COLOR", "1")
        .output()
        .expect("the handler binary runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test]
async fn the_smoke_test_passes_on_a_working_blog_every_run() {
    let data = tempfile::tempdir().unwrap();
    // Its timer each second, not each minute: the scheduled post goes out within the wait.
    let handler = Handler::start(data.path(), &[("BLOG_PUBLISH_EVERY", "1")]);
    for run in 1..=2 {
        let output = tokio::task::spawn_blocking({
            let base = handler.base.clone();
            move || smoke(&[&base, "--dev-user", "smoke-principal", "--wait", "20"])
        })
        .await
        .unwrap();
        let shown = text(&output);
        assert!(output.status.success(), "run {run}:\n{shown}");
        for step in [
            "Q6 ", "C2 ", "pic ", "C3 ", "C4 ", "Q2 ", "Q4 ", "Q5 ", "Q1 ", "C5 ", "C6 ", "C7 ",
            "sch ",
        ] {
            assert!(
                shown.lines().any(|line| line.starts_with(step)),
                "run {run}: no line for {step}:\n{shown}"
            );
        }
        assert!(
            shown.contains("copied into users after") && shown.contains("copied into feed after"),
            "{shown}"
        );
        assert!(
            shown.contains("gone from users after") && shown.contains("gone from feed after"),
            "{shown}"
        );
        assert!(
            shown.contains("copied into tags after") && shown.contains("gone from tags after"),
            "{shown}"
        );
        // C1 only the first time: the user stays for the next run.
        assert_eq!(
            shown.lines().any(|line| line.starts_with("C1 ")),
            run == 1,
            "run {run}:\n{shown}"
        );
    }
    // What it wrote is gone: no post of its user is left in the feed, once the change feed has
    // delivered the last deletion (the smoke test does not wait for its scheduled post's).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let feed: serde_json::Value =
            reqwest::get(format!("{}/api/feed", handler.base)).await.unwrap().json().await.unwrap();
        if feed["items"] == serde_json::json!([]) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{feed}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    let reads_only = tokio::task::spawn_blocking({
        let base = handler.base.clone();
        move || smoke(&[&base])
    })
    .await
    .unwrap();
    assert!(reads_only.status.success(), "{}", text(&reads_only));
    assert!(text(&reads_only).contains("reads only"), "{}", text(&reads_only));
}

/// A blog whose change feed nobody delivers (`BLOG_CHANGE_FEED=host` with no Functions host):
/// every request answers, but the post never reaches `users`: the smoke test fails and says so.
#[tokio::test]
async fn the_smoke_test_fails_naming_the_copy_that_never_arrives() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[("BLOG_CHANGE_FEED", "host")]);
    let output = tokio::task::spawn_blocking({
        let base = handler.base.clone();
        move || smoke(&[&base, "--dev-user", "smoke-principal", "--wait", "2"])
    })
    .await
    .unwrap();
    let shown = text(&output);
    assert!(!output.status.success(), "{shown}");
    assert!(shown.contains("smoke test failed at Q3: not copied into users within 2 s"), "{shown}");
    assert!(shown.contains("change feed"), "{shown}");
}

#[test]
fn bad_arguments_are_refused_with_what_to_do() {
    // Usage errors, as clap says them: exit 2, on stderr, with the usage or where to find it.
    for (args, says, usage) in [
        (&[][..], "<BASE_URL>", "Usage: handler smoke"),
        (&["localhost:7071"][..], "not an http or https URL", "try '--help'"),
        (
            &["http://127.0.0.1:9", "--token", "t", "--dev-user", "d"][..],
            "cannot be used with",
            "Usage: handler smoke",
        ),
        (
            &["http://127.0.0.1:9", "--colour"][..],
            "unexpected argument '--colour'",
            "Usage: handler smoke",
        ),
    ] {
        let output = smoke(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(said.contains(says) && said.contains(usage), "{args:?}: {}", text(&output));
    }
    // Nothing listens on port 9: the first step says it got no answer, at once with no time to
    // settle (`--settle 0`).
    let output = smoke(&["http://127.0.0.1:9", "--settle", "0"]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains("smoke test failed at Q6: GET /api/feed?limit=100 got no answer"),
        "{}",
        text(&output)
    );
    assert!(
        text(&output).contains("not retried: the 0 s the blog had to settle (--settle) are over"),
        "{}",
        text(&output)
    );
}

/// What the [`Proxy`] does with one request.
enum Verdict {
    /// Passes it to the handler, and the handler's answer back, unchanged.
    Forward,
    /// Answers this status itself: the handler never sees the request.
    Answer(u16),
    /// Passes it to the handler, but answers this status instead of the handler's answer: a
    /// request done, whose answer says it failed (a gateway's 502 for a worker cut off).
    ForwardThenAnswer(u16),
}

/// A request as the [`Proxy`]'s rule sees it.
struct Seen {
    method: Method,
    path: String,
    /// How long after the proxy started it came.
    since_start: Duration,
    /// 1 for the first request the rule sees, 2 for the next…
    number: usize,
}

impl Seen {
    fn is_write(&self) -> bool {
        self.method != Method::GET
    }
}

/// An HTTP proxy in front of the handler that answers as its rule says: what a new deployment
/// answers while it settles, without a deployment. Stops when dropped.
struct Proxy {
    base: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// A proxy to `target` on a free port that closes its first `closes` connections as soon
    /// as they are accepted (an app not listening yet) and then answers as `rule` says.
    async fn start(
        target: &str,
        closes: usize,
        rule: impl Fn(&Seen) -> Verdict + Send + Sync + 'static,
    ) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Forwarding {
            target: target.to_owned(),
            client: reqwest::Client::builder().no_proxy().build().unwrap(),
            rule: Box::new(rule),
            started: Instant::now(),
            seen: AtomicUsize::new(0),
        });
        let task = tokio::spawn(async move {
            for accepted in 0.. {
                let (stream, _) = listener.accept().await.unwrap();
                if accepted < closes {
                    drop(stream);
                    continue;
                }
                let state = state.clone();
                let service = hyper::service::service_fn(move |request| {
                    let state = state.clone();
                    async move { Ok::<_, Infallible>(state.answer(request).await) }
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service),
                );
            }
        });
        Proxy { base, task }
    }
}

/// What the [`Proxy`]'s connections share.
struct Forwarding {
    target: String,
    client: reqwest::Client,
    rule: Box<dyn Fn(&Seen) -> Verdict + Send + Sync>,
    started: Instant,
    seen: AtomicUsize,
}

impl Forwarding {
    async fn answer(&self, request: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
        let seen = Seen {
            method: request.method().clone(),
            path: request.uri().path().to_owned(),
            since_start: self.started.elapsed(),
            number: self.seen.fetch_add(1, Ordering::SeqCst) + 1,
        };
        match (self.rule)(&seen) {
            Verdict::Answer(status) => plain(status),
            Verdict::Forward => self.forward(request).await,
            Verdict::ForwardThenAnswer(status) => {
                self.forward(request).await;
                plain(status)
            }
        }
    }

    /// The request, sent on to the handler as it came; the handler's answer as it came.
    async fn forward(&self, request: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
        let (parts, body) = request.into_parts();
        let body = body.collect().await.unwrap().to_bytes();
        let path = parts.uri.path_and_query().map_or("/", |path| path.as_str());
        let mut sent =
            self.client.request(parts.method, format!("{}{path}", self.target)).body(body);
        for (name, value) in
            parts.headers.iter().filter(|(name, _)| !is_per_connection(name.as_str()))
        {
            sent = sent.header(name, value);
        }
        let answer = sent.send().await.expect("the handler answers the proxy");
        let mut response = Response::builder().status(answer.status());
        for (name, value) in
            answer.headers().iter().filter(|(name, _)| !is_per_connection(name.as_str()))
        {
            response = response.header(name, value);
        }
        response.body(Full::new(answer.bytes().await.unwrap())).unwrap()
    }
}

/// The headers each side of the proxy sets for its own connection.
fn is_per_connection(name: &str) -> bool {
    matches!(name, "host" | "connection" | "content-length" | "transfer-encoding" | "keep-alive")
}

/// An answer of the proxy's own, as a front end gives it: a status and a line of text.
fn plain(status: u16) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "text/plain")
        .body(Full::new(Bytes::from(format!("the proxy answers {status}"))))
        .unwrap()
}

/// `handler smoke` with `args`, run to its end off the test's runtime (which serves the proxy).
async fn smoke_through(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || smoke(&args.iter().map(String::as_str).collect::<Vec<_>>()))
        .await
        .unwrap()
}

/// A new deployment: the first connection closed (the host not listening yet), 503 to everything
/// for 2.5 s (and to the first request in any case: the host starting), then 401 to the first
/// two writes (the sign-in not accepted yet). Smoke waits each out, saying so, and passes.
#[tokio::test]
async fn the_smoke_test_waits_until_a_new_deployment_settles() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[("BLOG_PUBLISH_EVERY", "1")]);
    let refused = AtomicUsize::new(0);
    let proxy = Proxy::start(&handler.base, 1, move |seen| {
        if seen.number == 1 || seen.since_start < Duration::from_millis(2_500) {
            Verdict::Answer(503)
        } else if seen.is_write() && refused.fetch_add(1, Ordering::SeqCst) < 2 {
            Verdict::Answer(401)
        } else {
            Verdict::Forward
        }
    })
    .await;
    let output = smoke_through(args(
        &proxy,
        &["--dev-user", "smoke-principal", "--wait", "20", "--settle", "60"],
    ))
    .await;
    let shown = text(&output);
    assert!(output.status.success(), "{shown}");
    assert!(shown.contains("waiting up to 60 s for the blog to settle"), "{shown}");
    let retries = |start: &str| shown.lines().filter(|line| line.starts_with(start)).count();
    assert!(retries("Q6   no answer (") >= 1, "{shown}");
    assert!(
        retries("Q6   503 Service Unavailable: the app is still starting, retrying in ") >= 1,
        "{shown}"
    );
    // The first write is C1: this principal has no user yet.
    assert_eq!(retries("C1   401 Unauthorized: the sign-in is not accepted yet"), 2, "{shown}");
    assert!(shown.lines().any(|line| line.contains("(up to 60 s)")), "{shown}");
    for step in ["C1 ", "C2 ", "C3 ", "C4 ", "C5 ", "C6 ", "C7 "] {
        let answered = |line: &&str| {
            line.starts_with(step) && (line.contains(" 201 ") || line.contains(" 204 "))
        };
        assert!(shown.lines().any(|line| answered(&line)), "no line of {step}'s success:\n{shown}");
    }
    assert!(
        shown.contains("gone from users after") && shown.contains("gone from feed after"),
        "{shown}"
    );
}

/// A deployment that never starts: smoke retries until `--settle` has passed, then fails,
/// naming the step and the last answer.
#[tokio::test]
async fn the_smoke_test_gives_up_on_a_blog_that_never_settles() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[("BLOG_PUBLISH_EVERY", "1")]);
    let proxy = Proxy::start(&handler.base, 0, |_| Verdict::Answer(503)).await;
    let output =
        smoke_through(args(&proxy, &["--dev-user", "smoke-principal", "--settle", "3"])).await;
    let shown = text(&output);
    assert!(!output.status.success(), "{shown}");
    assert!(
        shown.contains("Q6   503 Service Unavailable: the app is still starting, retrying in"),
        "{shown}"
    );
    assert!(
        shown
            .contains("smoke test failed at Q6: GET /api/feed?limit=100 answered 503 Service Unavailable: the proxy answers 503"),
        "{shown}"
    );
    assert!(shown.contains("gave up after 3 s: the blog did not settle (--settle)"), "{shown}");
}

/// A sign-in that is never accepted: the reads pass, the first write is retried until
/// `--settle` has passed, and smoke fails naming it.
#[tokio::test]
async fn the_smoke_test_gives_up_on_a_sign_in_that_is_never_accepted() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[("BLOG_PUBLISH_EVERY", "1")]);
    let proxy = Proxy::start(&handler.base, 0, |seen| {
        if seen.is_write() { Verdict::Answer(401) } else { Verdict::Forward }
    })
    .await;
    let output =
        smoke_through(args(&proxy, &["--dev-user", "smoke-principal", "--settle", "3"])).await;
    let shown = text(&output);
    assert!(!output.status.success(), "{shown}");
    assert!(shown.lines().any(|line| line.starts_with("Q6 ") && line.contains(" 200 ")), "{shown}");
    assert!(shown.contains("C1   401 Unauthorized: the sign-in is not accepted yet"), "{shown}");
    assert!(
        shown.contains("smoke test failed at C1: POST /api/users answered 401 Unauthorized"),
        "{shown}"
    );
    assert!(shown.contains("gave up after 3 s"), "{shown}");
}

/// Every write done, but its first answer a 502: each is retried with its Idempotency-Key, and
/// answered as the first time (C1 201, C2–C4 201, C5–C7 204): nothing is written twice, and
/// nothing is left behind.
#[tokio::test]
async fn a_write_retried_after_it_was_done_is_done_once() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[("BLOG_PUBLISH_EVERY", "1")]);
    let answered = Mutex::new(HashSet::new());
    let proxy = Proxy::start(&handler.base, 0, move |seen| {
        if seen.is_write()
            && answered.lock().unwrap().insert((seen.method.clone(), seen.path.clone()))
        {
            Verdict::ForwardThenAnswer(502)
        } else {
            Verdict::Forward
        }
    })
    .await;
    let output = smoke_through(args(
        &proxy,
        &["--dev-user", "smoke-principal", "--wait", "20", "--settle", "60"],
    ))
    .await;
    let shown = text(&output);
    assert!(output.status.success(), "{shown}");
    for (step, status) in
        [("C1", 201), ("C2", 201), ("C3", 201), ("C4", 201), ("C5", 204), ("C6", 204), ("C7", 204)]
    {
        let line = format!(
            "{step:<4} 502 Bad Gateway: the front end got no answer from the app (starting, or restarting), retrying in "
        );
        assert!(shown.contains(&line), "no retry of {step}:\n{shown}");
        let again = format!(
            "{step:<4} sent again with its Idempotency-Key after 502 Bad Gateway: answered {status}, made once"
        );
        assert!(shown.contains(&again), "{again}:\n{shown}");
    }
    // One comment and one like were counted, though each was sent twice.
    assert!(
        shown.lines().any(|line| line.starts_with("Q2   GET") && line.contains(" 200 ")),
        "{shown}"
    );
    // Nothing it wrote is left: no post in the feed, none of its user's.
    for path in ["/api/feed", "/api/users/smoke-principal/posts"] {
        let list: serde_json::Value =
            reqwest::get(format!("{}{path}", handler.base)).await.unwrap().json().await.unwrap();
        assert_eq!(list["items"], serde_json::json!([]), "{path}: {list}");
    }
}

/// The smoke test's arguments: the proxy's URL, then `rest`.
fn args(proxy: &Proxy, rest: &[&str]) -> Vec<String> {
    std::iter::once(proxy.base.as_str()).chain(rest.iter().copied()).map(str::to_owned).collect()
}
