//! What a day of keyed writes leaves in the embedded store's memory: every write sent with an
//! `Idempotency-Key` leaves a request record for a day. Not a test.
//!
//!     cargo bench --bench keyed                                  # 86,400 writes: a day at one a second
//!     cargo bench --bench keyed -- --writes 20000                # fewer
//!     cargo bench --bench keyed -- --handler /other/target/release/handler  # another build
//!     cargo test --bench keyed -- --smoke --handler target/debug/handler     # every part once, seconds
//!
//! Through the release `handler` run as a child process on an empty data directory: 8 users,
//! each with a post, then the writes, 8 clients at a time, each user liking their post and
//! taking the like back (C4, C5), each with a new key, so that the blog's own items stay the
//! same few and what grows is the records. Resident memory before the writes and after them,
//! then after a restart on the same directory (SIGKILL, then started again: what a restart
//! loads), and the database's size on disk.
//!
//! `--smoke` (unless `--writes` says otherwise: 40 writes, a short settling before each memory
//! reading) shows that the bench runs, not what it measures (`benches/smoke.sh`, in CI).

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

#[path = "blog/client.rs"]
#[allow(dead_code)]
mod client;
#[path = "blog/data.rs"]
#[allow(dead_code)]
mod data;
#[path = "blog/process.rs"]
#[allow(dead_code)]
mod process;

use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use client::Client;

const CLIENTS: usize = 8;

fn main() {
    let mut writes = None;
    let mut binary: Option<PathBuf> = None;
    let mut smoke = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bench" => {}
            "--writes" => {
                writes =
                    Some(args.next().and_then(|n| n.parse().ok()).expect("--writes needs a number"))
            }
            // --binary: the name this option had first.
            "--handler" | "--binary" => {
                binary = Some(args.next().expect("--handler needs a path").into())
            }
            "--smoke" => smoke = true,
            other => panic!(
                "unknown argument {other:?}: cargo bench --bench keyed -- [--writes N] [--handler PATH] [--smoke]"
            ),
        }
    }
    let writes = writes.unwrap_or(if smoke { 40 } else { 86_400 });
    // How long the handler is left to settle before its memory is read.
    let settle = if smoke { Duration::from_millis(200) } else { Duration::from_secs(2) };
    let binary = binary
        .unwrap_or_else(|| process::handler_binary().unwrap_or_else(|error| panic!("{error}")));
    let runtime = tokio::runtime::Runtime::new().expect("a Tokio runtime");
    runtime.block_on(run(&binary, writes, settle));
}

fn rss_mib(child: &Child) -> f64 {
    process::status_field(child.id(), "VmRSS:").unwrap_or(0) as f64 / 1024.0
}

fn disk_mib(dir: &Path) -> f64 {
    let files = std::fs::read_dir(dir).expect("the data directory").flatten();
    files.filter_map(|entry| entry.metadata().ok()).map(|meta| meta.len()).sum::<u64>() as f64
        / (1024.0 * 1024.0)
}

async fn run(binary: &Path, writes: usize, settle: Duration) {
    let data = tempfile::tempdir().expect("a temporary directory");
    let (mut child, base) = process::spawn_on(binary, data.path());
    process::first_answer(&base, Instant::now()).await;
    let client = Client::new(base);
    let mut posts = Vec::new();
    for n in 0..CLIENTS {
        let user = format!("keyed{n}");
        assert!(client.post(&user, "/api/users", &json!({"username": user})).await.ok());
        let post = client
            .post(&user, "/api/posts", &json!({"userId": user, "title": "Liked", "content": "x"}))
            .await;
        assert!(post.ok());
        posts.push((user, post.id()));
    }
    tokio::time::sleep(settle).await;
    let before = rss_mib(&child);
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for (user, post) in posts {
        let (client, next) = (client.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut liked = false;
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= writes {
                    return;
                }
                let key = format!("bench-{n}");
                let answer = if liked {
                    client
                        .delete_keyed(&user, &format!("/api/posts/{post}/likes/{user}"), &key)
                        .await
                } else {
                    client
                        .post_keyed(
                            &user,
                            &format!("/api/posts/{post}/likes"),
                            &json!({"userId": user}),
                            &key,
                        )
                        .await
                };
                assert!(answer.ok(), "write {n}: {}", answer.sample.status);
                liked = !liked;
            }
        }));
    }
    for task in tasks {
        task.await.expect("a client");
    }
    let elapsed = started.elapsed();
    tokio::time::sleep(settle).await;
    let after = rss_mib(&child);
    child.kill().expect("the handler stops");
    child.wait().expect("the handler is gone");

    let started = Instant::now();
    let (mut child, base) = process::spawn_on(binary, data.path());
    let restart = process::first_answer(&base, started).await;
    tokio::time::sleep(settle).await;
    let restarted = rss_mib(&child);
    child.kill().expect("the handler stops");
    child.wait().expect("the handler is gone");

    println!(
        "| keyed writes | writes/s, 8 clients | RSS before | RSS after them | RSS after a restart | restart (first answer) | on disk |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    println!(
        "| {writes} | {:.0} | {before:.0} MiB | {after:.0} MiB | {restarted:.0} MiB | {:.2} s | {:.1} MiB |",
        writes as f64 / elapsed.as_secs_f64(),
        restart.as_secs_f64(),
        disk_mib(data.path())
    );
}
