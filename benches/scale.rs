//! The embedded store as its data grows: what a restart costs (time to the first answer,
//! resident memory), what the data takes on disk, and whether writes slow down. Not a test.
//!
//!     cargo bench --bench scale                          # 20,000 and 100,000 items, ~7 minutes
//!     cargo bench --bench scale -- --items 5000,20000    # other sizes
//!     cargo bench --bench scale -- --keep /tmp/grown      # leaves the data set there, to profile
//!     cargo bench --bench scale -- --handler OTHER_BINARY # another build (default target/release/handler)
//!     cargo test --bench scale -- --smoke --handler target/debug/handler   # every part once, seconds
//!
//! It grows one data set, in a temporary directory, through the release `handler` run as a
//! child process, in the article's shape: mostly C3 (comments: most of the article's items are
//! comments and likes), a post per 25 comments and a user per 5 posts, seeded. Before each batch
//! of comments it adds the posts that keep that ratio, and each comment goes to a random post,
//! so a post's comments grow with its age, not with the data set. 8 clients at a time. At each
//! size it measures C3 throughput over the last 2,000 comments, stops the handler (SIGKILL: what
//! survives is what the database holds), starts it again on the same directory and measures the
//! time to its first answer and its resident memory idle, then under 5 s of C3 load. Last, the
//! hot-post row: C3 on one post with 1,000 comments against one with 10.
//!
//! `--smoke` (unless `--items` says otherwise: 60 and 120 items, 1 s of load after each restart,
//! the hot posts at 2 and 20 comments, 20 measured) runs every part on the least data that
//! reaches it: it shows that the bench runs, not what it measures (`benches/smoke.sh`, in CI).

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

use std::path::Path;
use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use client::Client;
use data::Rng;

const CLIENTS: usize = 8;
const COMMENTS_PER_POST: usize = 25;
const POSTS_PER_USER: usize = 5;
const MEASURED_COMMENTS: usize = 2_000;

/// How much each part does: the article's figures by default, the least that runs every part
/// with `--smoke`.
struct Shape {
    /// C3 load after each restart.
    load_for: Duration,
    /// Comments sent between two samples of memory during that load.
    load_batch: usize,
    /// The comments on the two hot posts before their rate is taken, and how many it is taken on.
    hot: [usize; 2],
    hot_measured: usize,
}

impl Shape {
    const FULL: Shape = Shape {
        load_for: Duration::from_secs(5),
        load_batch: 200,
        hot: [10, 1_000],
        hot_measured: 400,
    };
    const SMOKE: Shape =
        Shape { load_for: Duration::from_secs(1), load_batch: 20, hot: [2, 20], hot_measured: 20 };
}

struct Row {
    items: usize,
    c3_per_second: f64,
    restart: Duration,
    rss_started_kib: u64,
    rss_running_kib: u64,
    c3_after_restart_per_second: f64,
    disk_bytes: u64,
}

fn main() {
    let mut sizes = None;
    let mut keep: Option<std::path::PathBuf> = None;
    let mut binary = None;
    let mut smoke = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bench" => {}
            "--items" => {
                sizes = Some(
                    args.next()
                        .expect("--items needs sizes")
                        .split(',')
                        .map(|n| n.parse().expect("a number"))
                        .collect(),
                )
            }
            "--handler" => {
                binary =
                    Some(std::path::PathBuf::from(args.next().expect("--handler needs a path")))
            }
            "--smoke" => smoke = true,
            "--keep" => keep = Some(args.next().expect("--keep needs an empty directory").into()),
            other => panic!(
                "unknown argument {other:?}: cargo bench --bench scale -- [--items 20000,100000] [--keep DIR] [--handler PATH] [--smoke]"
            ),
        }
    }
    let shape = if smoke { Shape::SMOKE } else { Shape::FULL };
    let sizes = sizes.unwrap_or_else(|| if smoke { vec![60, 120] } else { vec![20_000, 100_000] });
    let binary =
        binary.map_or_else(process::handler_binary, Ok).unwrap_or_else(|error| panic!("{error}"));
    let runtime = tokio::runtime::Runtime::new().expect("a Tokio runtime");
    let (rows, fan_out, hot) = runtime.block_on(run(&binary, &sizes, keep.as_deref(), &shape));
    println!(
        "| items | C3/s, 8 clients, growing | restart (first answer) | RSS after start | RSS under C3 load | C3/s after restart | on disk |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for row in rows {
        println!(
            "| {} | {:.0} | {:.2} s | {:.0} MiB | {:.0} MiB | {:.0} | {:.1} MiB |",
            row.items,
            row.c3_per_second,
            row.restart.as_secs_f64(),
            row.rss_started_kib as f64 / 1024.0,
            row.rss_running_kib as f64 / 1024.0,
            row.c3_after_restart_per_second,
            row.disk_bytes as f64 / 1_048_576.0
        );
    }
    println!();
    println!(
        "| at {} items | a rename reaches the renamed user's post | `handler rebuild-copies` |",
        rows_last_items(&sizes)
    );
    println!("| --- | ---: | ---: |");
    println!(
        "| across every partition of `posts` | {:.2} s | {:.2} s |",
        fan_out.rename.as_secs_f64(),
        fan_out.rebuild.as_secs_f64()
    );
    println!();
    println!(
        "| hot post: C3/s, 8 clients, one post | with {} comments | with {} comments |",
        shape.hot[0], shape.hot[1]
    );
    println!("| --- | ---: | ---: |");
    println!("| at {} items | {:.0} | {:.0} |", rows_last_items(&sizes), hot.0, hot.1);
}

fn rows_last_items(sizes: &[usize]) -> usize {
    sizes.last().copied().unwrap_or(0)
}

/// The data set so far: who can comment on what, and how many items exist.
struct Grown {
    users: Vec<String>,
    posts: Vec<(String, String)>, // (post, its author)
    items: usize,
    rng: Rng,
}

async fn run(
    binary: &Path,
    sizes: &[usize],
    keep: Option<&Path>,
    shape: &Shape,
) -> (Vec<Row>, FanOut, (f64, f64)) {
    let temporary = tempfile::tempdir().expect("a temporary directory");
    let data = keep.unwrap_or(temporary.path());
    let mut grown = Grown { users: Vec::new(), posts: Vec::new(), items: 0, rng: Rng::new(7) };
    let mut rows = Vec::new();
    for &size in sizes {
        let (mut child, base) = process::spawn_on(binary, data);
        let client = Client::new(base.clone());
        process::first_answer(&base, Instant::now()).await;
        let c3_per_second = grow(&client, &mut grown, size).await;
        child.kill().expect("the handler stops");
        child.wait().expect("the handler is gone");

        let started = Instant::now();
        let (child, base) = process::spawn_on(binary, data);
        let restart = process::first_answer(&base, started).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let rss_started_kib = rss(&child);
        let client = Client::new(base);
        let (c3_after_restart_per_second, rss_running_kib) =
            comment_load(&client, &mut grown, &child, shape).await;
        let mut child = child;
        child.kill().expect("the handler stops");
        child.wait().expect("the handler is gone");
        rows.push(Row {
            items: grown.items,
            c3_per_second,
            restart,
            rss_started_kib,
            rss_running_kib,
            c3_after_restart_per_second,
            disk_bytes: directory_bytes(data),
        });
        eprintln!(
            "{} items: C3 {:.0}/s growing, restart {:.2} s, RSS {} KiB after start, {} KiB under load, C3 {:.0}/s after restart, {} bytes on disk",
            grown.items,
            c3_per_second,
            restart.as_secs_f64(),
            rss_started_kib,
            rss_running_kib,
            c3_after_restart_per_second,
            directory_bytes(data)
        );
    }
    let (mut child, base) = process::spawn_on(binary, data);
    process::first_answer(&base, Instant::now()).await;
    let client = Client::new(base);
    let rename = rename(&client, &grown).await;
    let hot = hot_post(&client, &mut grown, shape).await;
    child.kill().expect("the handler stops");
    child.wait().expect("the handler is gone");
    let rebuild = rebuild_copies(binary, data);
    (rows, FanOut { rename, rebuild }, hot)
}

/// The calls that must see every physical partition of `posts`, at the last size.
struct FanOut {
    /// A rename answered → the renamed user's first post shows the new name (`UsersChangeFeed`'s
    /// query across `posts`, then `updateUsernames` in each partition it found).
    rename: Duration,
    /// `handler rebuild-copies` on the whole data set: both change feeds from their beginning.
    rebuild: Duration,
}

/// Renames the first user (the author of the first posts) and waits for the new name on the
/// first post.
async fn rename(client: &Client, grown: &Grown) -> Duration {
    let (post, author) = grown.posts[0].clone();
    let renamed = format!("{author}-renamed");
    let started = Instant::now();
    let answer =
        client.put(&author, &format!("/api/users/{author}"), &json!({ "username": renamed })).await;
    assert!(answer.ok(), "the rename failed: {}", answer.body);
    loop {
        let shown = client.get(&format!("/api/posts/{post}")).await;
        if shown.body.get("userUsername").and_then(|name| name.as_str()) == Some(renamed.as_str()) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the rename did not reach the post in 120 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Times `handler rebuild-copies` on `data`.
fn rebuild_copies(binary: &Path, data: &Path) -> Duration {
    let started = Instant::now();
    let status = std::process::Command::new(binary)
        .arg("rebuild-copies")
        .env("BLOG_DATA_DIR", data)
        .env("RUST_LOG", "warn")
        .env_remove("CosmosDB")
        .env_remove("CosmosDB__accountEndpoint")
        .status()
        .expect("handler rebuild-copies runs");
    assert!(status.success(), "handler rebuild-copies failed: {status}");
    started.elapsed()
}

/// C3 on a post with 10 comments, then on one with 1,000: the rate of 400 comments on each
/// (by default: `shape` says).
async fn hot_post(client: &Client, grown: &mut Grown, shape: &Shape) -> (f64, f64) {
    let mut rates = Vec::new();
    for existing in shape.hot {
        let author = grown.users[0].clone();
        let body = json!({ "userId": author, "title": data::text(&mut grown.rng, (35, 65)), "content": data::text(&mut grown.rng, (500, 2_000)) });
        let post = client.post(&author, "/api/posts", &body).await.id();
        comments_on(client, grown, &post, existing).await;
        let started = Instant::now();
        comments_on(client, grown, &post, shape.hot_measured).await;
        rates.push(shape.hot_measured as f64 / started.elapsed().as_secs_f64());
    }
    (rates[0], rates[1])
}

/// `count` comments on `post` by [`CLIENTS`] clients.
async fn comments_on(client: &Client, grown: &mut Grown, post: &str, count: usize) {
    let saved = std::mem::take(&mut grown.posts);
    grown.posts = vec![(post.to_owned(), String::new())];
    comments(client, grown, count).await;
    grown.posts = saved;
}

/// Grows the data set to `size` items; the C3 rate of its last [`MEASURED_COMMENTS`] comments.
async fn grow(client: &Client, grown: &mut Grown, size: usize) -> f64 {
    // The batches of comments so far, newest last: the rate is taken over the last 2,000.
    let mut batches: Vec<(usize, Duration)> = Vec::new();
    while grown.items < size {
        let batch = (size - grown.items).clamp(1, MEASURED_COMMENTS);
        if grown.posts.len() * COMMENTS_PER_POST < grown.items + batch {
            if grown.users.len() * POSTS_PER_USER <= grown.posts.len() {
                let principal = format!("scale-{}", grown.users.len());
                client.post(&principal, "/api/users", &json!({ "username": principal })).await;
                grown.users.push(principal);
                grown.items += 1;
            }
            let author = grown.users.last().expect("a user").clone();
            let body = json!({ "userId": author, "title": data::text(&mut grown.rng, (35, 65)), "content": data::text(&mut grown.rng, (500, 2_000)) });
            let post = client.post(&author, "/api/posts", &body).await.id();
            grown.posts.push((post, author));
            grown.items += 3; // the post, and its copies in `users` and `feed` (the feed keeps 100)
        }
        let batch = (size - grown.items).clamp(1, MEASURED_COMMENTS);
        // Posts enough for this batch in the article's ratio, before it.
        if (grown.posts.len() * COMMENTS_PER_POST) < grown.items + batch {
            continue;
        }
        let started = Instant::now();
        comments(client, grown, batch).await;
        batches.push((batch, started.elapsed()));
    }
    let (mut count, mut took) = (0, Duration::ZERO);
    for (batch, elapsed) in batches.iter().rev() {
        if count >= MEASURED_COMMENTS {
            break;
        }
        count += batch;
        took += *elapsed;
    }
    count as f64 / took.as_secs_f64().max(f64::EPSILON)
}

/// `count` comments by [`CLIENTS`] clients, each on a random post by a random user.
async fn comments(client: &Client, grown: &mut Grown, count: usize) {
    let plan: Vec<(String, String, String)> = (0..count)
        .map(|_| {
            let (post, _) = grown.posts[grown.rng.index(grown.posts.len())].clone();
            let user = grown.users[grown.rng.index(grown.users.len())].clone();
            (post, user, data::text(&mut grown.rng, (50, 300)))
        })
        .collect();
    let plan = Arc::new(plan);
    let next = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (client, plan, next) = (client.clone(), plan.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    let Some((post, user, content)) = plan.get(n) else { break };
                    let answer = client
                        .post(
                            user,
                            &format!("/api/posts/{post}/comments"),
                            &json!({ "userId": user, "content": content }),
                        )
                        .await;
                    assert!(answer.ok(), "C3 failed: {}", answer.body);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a client");
    }
    grown.items += count;
}

/// C3 for `shape.load_for` after a restart: its rate, and the highest resident memory seen
/// meanwhile.
async fn comment_load(
    client: &Client,
    grown: &mut Grown,
    child: &Child,
    shape: &Shape,
) -> (f64, u64) {
    let started = Instant::now();
    let mut done = 0;
    let mut peak = rss(child);
    while started.elapsed() < shape.load_for {
        comments(client, grown, shape.load_batch).await;
        done += shape.load_batch;
        peak = peak.max(rss(child));
    }
    (done as f64 / started.elapsed().as_secs_f64(), peak)
}

fn rss(child: &Child) -> u64 {
    process::status_field(child.id(), "VmRSS:").unwrap_or(0)
}

fn directory_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| entry.metadata().ok())
                .map(|meta| meta.len())
                .sum()
        })
        .unwrap_or(0)
}
