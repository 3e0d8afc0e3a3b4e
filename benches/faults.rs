//! C3 and Q2 while Cosmos DB throttles a share of its operations, beside none (issue 31). Not a
//! test.
//!
//!     cargo bench --bench faults                     # 10 % of operations answered 429
//!     cargo bench --bench faults -- --share 0.3      # another share
//!     cargo test --bench faults -- --smoke           # every part once, seconds
//!
//! The blog runs in this process as `main` runs it (`Blog::start` on the state `connect` builds,
//! served by `Blog::serve`), on the embedded store, its SDK client reaching the emulator through
//! the SDK's own fault injection: a rule answers the given share of every operation (reads,
//! queries, writes, batches) with 429 and `x-ms-retry-after-ms: 10`, below the SDK's retries,
//! which wait as asked and send again. Each run: one user and one post, then C3 on that post
//! (without a key, then each with a new `Idempotency-Key`) and Q2 of it, one at a time (latency p50/p99) and with 8 clients (requests per second), the same
//! counts with and without the rule. What a client sees beyond the SDK's retries (a 503) is
//! counted as an error.
//!
//! `--smoke` sends each request 3 times one at a time and 16 times by the clients: it shows that
//! the bench runs, not what it measures (`benches/smoke.sh`, in CI).

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

#[path = "blog/client.rs"]
#[allow(dead_code)]
mod client;

use std::sync::Arc;
use std::time::{Duration, Instant};

use blog::Blog;
use blog::test_support::sdk_faults::{
    CustomResponseBuilder, FaultInjectionResultBuilder, FaultInjectionRuleBuilder,
};
use blog::test_support::{SdkFaults, embedded_config, store_with_sdk_faults};
use client::{Client, Sample, Stats};
use serde_json::json;

const CLIENTS: usize = 8;

/// How many of each request are sent: one at a time, then by [`CLIENTS`] clients.
#[derive(Clone, Copy)]
struct Counts {
    one_at_a_time: usize,
    concurrent: usize,
}

impl Counts {
    const FULL: Counts = Counts { one_at_a_time: 300, concurrent: 2_000 };
    const SMOKE: Counts = Counts { one_at_a_time: 3, concurrent: 2 * CLIENTS };
}

struct Row {
    request: &'static str,
    one_at_a_time: Stats,
    per_second: f64,
    errors: usize,
}

fn main() {
    let mut share = 0.1_f32;
    let mut counts = Counts::FULL;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bench" => {}
            "--share" => {
                share = args
                    .next()
                    .and_then(|value| value.parse().ok())
                    .expect("--share needs a number in 0..1")
            }
            "--smoke" => counts = Counts::SMOKE,
            other => panic!(
                "unknown argument {other:?}: cargo bench --bench faults -- [--share 0.1] [--smoke]"
            ),
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let clean = runtime.block_on(run(None, counts));
    let throttled = runtime.block_on(run(Some(share), counts));
    println!(
        "| request | throttled | p50 ms, one at a time | p99 ms | requests/s, {CLIENTS} clients | errors seen by the client |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for (rows, label) in
        [(&clean, "none".to_owned()), (&throttled, format!("{:.0} %", share * 100.0))]
    {
        for row in rows {
            println!(
                "| {} | {label} | {:.2} | {:.2} | {:.0} | {} |",
                row.request,
                row.one_at_a_time.p50_ms,
                row.one_at_a_time.p99_ms,
                row.per_second,
                row.errors
            );
        }
    }
}

/// The blog, throttled on `share` of its operations (`None`: not at all), measured.
async fn run(share: Option<f32>, counts: Counts) -> Vec<Row> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut config = embedded_config(dir.path());
    config.write_limit = None;
    let mut faults = SdkFaults::default();
    if let Some(share) = share {
        let throttled = CustomResponseBuilder::new(azure_core::http::StatusCode::TooManyRequests)
            .with_header("x-ms-retry-after-ms", "10")
            .build();
        let result = FaultInjectionResultBuilder::new()
            .with_custom_response(throttled)
            .with_probability(share)
            .build();
        faults
            .rules
            .push(Arc::new(FaultInjectionRuleBuilder::new("throttled share", result).build()));
    }
    let store = store_with_sdk_faults(&config, faults).await.expect("the store opens");
    let blog = Blog::start(&config, blog::state_on(&config, store).await.expect("the blog starts"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { blog.serve(listener, std::future::pending()).await });
    let client = Client::new(base);

    const USER: &str = "bench-user";
    let user = USER;
    assert!(
        client.post(user, "/api/users", &json!({"username": "bench"})).await.ok(),
        "the user is created"
    );
    // Each measurement on a post of its own, so that none runs on a partition the one before
    // it filled.
    let new_post = async || {
        for _ in 0..100 {
            let answer = client
                .post(
                    user,
                    "/api/posts",
                    &json!({"userId": user, "title": "Throttled", "content": "Text."}),
                )
                .await;
            if answer.ok() {
                return answer.id();
            }
        }
        panic!("no post was created in 100 attempts");
    };
    let comment = json!({"userId": user, "content": "A comment."});
    let c3 = {
        let (comments, comment) =
            (format!("/api/posts/{}/comments", new_post().await), comment.clone());
        measure(&client, counts, move |client| {
            let (comments, comment) = (comments.clone(), comment.clone());
            async move { client.post(user, &comments, &comment).await.sample }
        })
        .await
    };
    // The same, each with a new Idempotency-Key: what making a write once costs.
    let keyed = {
        let comments = format!("/api/posts/{}/comments", new_post().await);
        measure(&client, counts, move |client| {
            let (comments, comment) = (comments.clone(), comment.clone());
            async move {
                client
                    .post_keyed(user, &comments, &comment, &uuid::Uuid::new_v4().to_string())
                    .await
                    .sample
            }
        })
        .await
    };
    let read = format!("/api/posts/{}", new_post().await);
    let q2 = measure(&client, counts, move |client| {
        let read = read.clone();
        async move { client.get(&read).await.sample }
    })
    .await;
    vec![
        Row {
            request: "C3 `POST /api/posts/{id}/comments`",
            one_at_a_time: c3.0,
            per_second: c3.1,
            errors: c3.2,
        },
        Row {
            request: "C3 with an `Idempotency-Key`",
            one_at_a_time: keyed.0,
            per_second: keyed.1,
            errors: keyed.2,
        },
        Row {
            request: "Q2 `GET /api/posts/{id}`",
            one_at_a_time: q2.0,
            per_second: q2.1,
            errors: q2.2,
        },
    ]
}

/// One request, `counts.one_at_a_time` times in a row, then `counts.concurrent` times by
/// [`CLIENTS`] clients: the latencies of the first, the rate of the second, the errors of both.
async fn measure<F, Fut>(client: &Client, counts: Counts, request: F) -> (Stats, f64, usize)
where
    F: Fn(Client) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Sample> + Send,
{
    let mut samples = Vec::with_capacity(counts.one_at_a_time);
    for _ in 0..counts.one_at_a_time {
        samples.push(request(client.clone()).await);
    }
    let stats = Stats::of(&samples);
    let started = Instant::now();
    let mut running = tokio::task::JoinSet::new();
    for _ in 0..CLIENTS {
        let (client, request) = (client.clone(), request.clone());
        running.spawn(async move {
            let mut errors = 0;
            for _ in 0..counts.concurrent / CLIENTS {
                if !(200..300).contains(&request(client.clone()).await.status) {
                    errors += 1;
                }
            }
            errors
        });
    }
    let mut errors = stats.errors;
    while let Some(done) = running.join_next().await {
        errors += done.expect("a client ran");
    }
    let per_second =
        counts.concurrent as f64 / started.elapsed().max(Duration::from_millis(1)).as_secs_f64();
    (stats, per_second, errors)
}
