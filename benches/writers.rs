//! A writer's requests beyond the article's (drafts, previews, revisions) and the scheduled
//! posts' timer: what each request costs the store, and how late the timer publishes posts due
//! in the same minute. Not a test: it asserts nothing about time (BENCHMARKS.md, "Writers").
//!
//!     cargo bench --bench writers                        # 100 posts due in one minute
//!     cargo bench --bench writers -- --due 100 --runs 20 # posts due; samples of each request
//!     cargo bench --bench writers -- --handler OTHER_BUILD
//!     cargo test --bench writers -- --smoke --handler target/debug/handler   # every part once
//!
//! The `handler` executable runs as a child process on an empty data directory (embedded store,
//! the change feed and the timer in the process, `BLOG_AUTH=development`), and the bench:
//!
//! 1. makes each request `--runs` times: C2 of a published post, of a draft and of a scheduled
//!    one, a user's drafts, an edit (its revision kept), an edit of a post that keeps 20
//!    revisions already (the oldest deleted), the revisions, one revision with its changes, a
//!    restore, a preview link shared, its page, revoked, a draft published; each answer's
//!    `x-ms-request-charge`, `x-cosmos-operations` and `x-cosmos-partitions`;
//! 2. schedules `--due` posts for the same whole minute (the next at least 20 s away), by ten
//!    writers, and waits for them: each post's lateness is its `creationDate` (when the timer
//!    published it) less its `publishAt`, and the time until it is in Q6 (the feed's copy, made
//!    by `PostsChangeFeed`), polled every 50 ms;
//! 3. reads the timer's own lines (`blog::scheduled`): what a run with nothing due costs, and
//!    the run that published the posts.
//!
//! RU on the embedded store are the SDK emulator's synthetic charges (BENCHMARKS.md, "Reading");
//! the operations are what Cosmos DB would be asked.
//!
//! `--smoke` (5 posts due, a timer each second, 2 runs) shows that the bench runs, not what it
//! measures (`benches/smoke.sh`, in CI).

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

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use client::{Client, Sample, Stats, ms, percentile};

/// The command line: `cargo bench --bench writers -- [--smoke] [--due N] [--runs N] …`.
struct Args {
    /// Posts scheduled for the same tick.
    due: usize,
    /// Samples of each request.
    runs: usize,
    /// The timer's period (`BLOG_PUBLISH_EVERY`), seconds.
    every: u64,
    handler: Option<PathBuf>,
}

impl Args {
    fn parse() -> Args {
        let mut args = Args { due: 100, runs: 20, every: 60, handler: None };
        let mut given = std::env::args().skip(1);
        while let Some(flag) = given.next() {
            let mut value = |name: &str| -> String {
                given.next().unwrap_or_else(|| panic!("{name} needs a value"))
            };
            let number = |name: &str, text: String| -> usize {
                text.parse().unwrap_or_else(|_| panic!("{name} needs a whole number, not {text:?}"))
            };
            match flag.as_str() {
                "--bench" => {} // cargo bench passes it to every bench
                "--smoke" => {
                    args.due = 5;
                    args.runs = 2;
                    args.every = 1;
                }
                "--due" => args.due = number("--due", value("--due")).max(1),
                "--runs" => args.runs = number("--runs", value("--runs")).max(1),
                "--handler" => args.handler = Some(PathBuf::from(value("--handler"))),
                "--help" | "-h" => {
                    println!(
                        "cargo bench --bench writers -- [--smoke] [--due N=100] [--runs N=20] [--handler PATH]"
                    );
                    std::process::exit(0);
                }
                other => panic!("unknown argument {other:?}: see --help"),
            }
        }
        args
    }
}

/// One line of the timer's (`blog::scheduled`): posts published (0 for a run with none due),
/// its RU and operations.
#[derive(Clone, Copy, Debug)]
struct TimerRun {
    published: u64,
    ru: f64,
    operations: u64,
    /// How long the run took, from its start (when it dates the posts it publishes).
    ms: f64,
}

/// A `handler` child on an empty data directory, its timer's lines read from its log.
struct Handler {
    child: Child,
    base: String,
    runs: Arc<Mutex<Vec<TimerRun>>>,
    _data: tempfile::TempDir,
}

impl Handler {
    fn spawn(binary: &Path, every: u64) -> Handler {
        let data = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = Command::new(binary)
            .env("BLOG_DATA_DIR", data.path())
            .env("BLOG_LISTEN", format!("127.0.0.1:{port}"))
            // The timer's lines: a run with nothing due says so at debug level.
            .env("RUST_LOG", "warn,blog::scheduled=debug")
            .env("BLOG_AUTH", "development")
            .env("BLOG_WRITES_PER_MINUTE", "off")
            .env("BLOG_PUBLISH_EVERY", every.to_string())
            .env_remove("CosmosDB")
            .env_remove("CosmosDB__accountEndpoint")
            .env_remove("FUNCTIONS_CUSTOMHANDLER_PORT")
            .env_remove("BLOG_CHANGE_FEED")
            .env_remove("BLOG_SCRIPTS")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the handler starts");
        let runs = Arc::new(Mutex::new(Vec::new()));
        let stdout = child.stdout.take().unwrap();
        let kept = runs.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                match timer_run(&line) {
                    Some(run) => kept.lock().unwrap().push(run),
                    None => eprintln!("handler: {line}"),
                }
            }
        });
        Handler { child, base: format!("http://127.0.0.1:{port}"), runs, _data: data }
    }

    fn runs(&self) -> Vec<TimerRun> {
        self.runs.lock().unwrap().clone()
    }
}

impl Drop for Handler {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The figures of a `blog::scheduled` line (`published=3 stale=0 ru=12.40 operations=7 ms=4.1`).
fn timer_run(line: &str) -> Option<TimerRun> {
    if !line.contains("blog::scheduled") {
        return None;
    }
    let field = |name: &str| {
        line.split_whitespace()
            .find_map(|part| part.strip_prefix(name)?.strip_prefix('='))
            .map(|value| value.trim_matches('"').to_owned())
    };
    Some(TimerRun {
        published: field("published").and_then(|v| v.parse().ok()).unwrap_or(0),
        ru: field("ru")?.parse().ok()?,
        operations: field("operations")?.parse().ok()?,
        ms: field("ms").and_then(|v| v.parse().ok()).unwrap_or(0.0),
    })
}

// `quiet_library_backtraces` sets an environment variable: sound only before any thread starts.
#[allow(unsafe_code)]
fn main() {
    // SAFETY: the first statement of `main`: no runtime and no other thread exist yet.
    unsafe { blog::quiet_library_backtraces() };
    tokio::runtime::Runtime::new().expect("a Tokio runtime").block_on(run());
}

async fn run() {
    let args = Args::parse();
    let binary = match &args.handler {
        Some(path) => path.clone(),
        None => process::handler_binary().unwrap_or_else(|error| panic!("{error}")),
    };
    println!("# Writers (`cargo bench --bench writers`)\n");
    println!("{}", process::machine(&binary));
    let handler = Handler::spawn(&binary, args.every);
    process::first_answer(&handler.base, Instant::now()).await;
    let client = Client::new(handler.base.clone());
    let requests = measure_requests(&client, args.runs).await;
    println!(
        "## What each request costs ({} samples each)\n\n\
         | request | RU (mean) | operations | partitions | latency p50 / p99 (ms) | errors |\n\
         | --- | ---: | ---: | --- | ---: | ---: |",
        args.runs
    );
    for (what, samples) in &requests {
        let stats = Stats::of(samples);
        println!(
            "| {what} | {:.2} | {} | {} | {:.1} / {:.1} | {} |",
            stats.mean_charge,
            stats.operations_text(),
            stats.partitions_text(),
            stats.p50_ms,
            stats.p99_ms,
            stats.errors
        );
    }
    println!();
    let idle_runs = handler.runs();
    let lateness = measure_scheduled(&client, &args).await;
    print_scheduled(&args, &lateness);
    // The timer's lines: the runs with none due, and those that published.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let runs = handler.runs();
    let empty: Vec<&TimerRun> = runs.iter().filter(|run| run.published == 0).collect();
    let publishing: Vec<&TimerRun> = runs.iter().filter(|run| run.published > 0).collect();
    println!("## The timer's runs\n");
    println!(
        "- {} runs with nothing due (of {} before the posts were scheduled): {} operations, {:.2} RU, {:.1} ms each (mean)",
        empty.len(),
        idle_runs.len(),
        empty.first().map_or(0, |run| run.operations),
        empty.iter().map(|run| run.ru).sum::<f64>() / empty.len().max(1) as f64,
        empty.iter().map(|run| run.ms).sum::<f64>() / empty.len().max(1) as f64,
    );
    for run in publishing {
        println!(
            "- a run that published {} posts: {} operations, {:.2} RU ({:.2} RU a post), in {:.1} ms \
             (each post is dated at the run's start, and readable once its own replace is done)",
            run.published,
            run.operations,
            run.ru,
            run.ru / run.published as f64,
            run.ms
        );
    }
}

/// Each request of the writer's workflow, `runs` times: its samples, by name.
async fn measure_requests(client: &Client, runs: usize) -> Vec<(&'static str, Vec<Sample>)> {
    let writer = "writer";
    let created = client.post(writer, "/api/users", &json!({"username": "Writer"})).await;
    assert!(created.ok(), "C1: {}", created.body);
    let mut table: Vec<(&'static str, Vec<Sample>)> = Vec::new();
    let mut record =
        |what: &'static str, sample: Sample| match table.iter_mut().find(|(name, _)| *name == what)
        {
            Some((_, samples)) => samples.push(sample),
            None => table.push((what, vec![sample])),
        };
    let tomorrow = rfc3339(OffsetDateTime::now_utc() + Duration::from_secs(86_400));
    // A post kept at 20 revisions: each edit of it deletes the oldest.
    let full = new_post(client, writer, json!({})).await;
    for round in 0..20 {
        edit(client, writer, &full, round, json!({})).await;
    }
    for round in 0..runs {
        let post = client.post(writer, "/api/posts", &post_body(writer, round, json!({}))).await;
        record("C2, published (the article's)", post.sample.clone());
        let published = post.id();
        let draft_body = post_body(writer, round, json!({"status": "draft"}));
        let draft = client.post(writer, "/api/posts", &draft_body).await;
        record("C2, a draft", draft.sample.clone());
        let scheduled_body =
            post_body(writer, round, json!({"status": "scheduled", "publishAt": tomorrow}));
        let scheduled = client.post(writer, "/api/posts", &scheduled_body).await;
        record("C2, scheduled", scheduled.sample.clone());
        // The copies of this round's posts made, as a writer's next look would find them.
        settle().await;
        let drafts = client.get_as(writer, &format!("/api/users/{writer}/drafts")).await;
        assert!(drafts.ok(), "drafts: {}", drafts.body);
        record("a user's drafts (a page)", drafts.sample);
        let edited = edit(client, writer, &published, round, json!({})).await;
        record("C2 edit, its revision kept", edited);
        let at_limit = edit(client, writer, &full, 20 + round, json!({})).await;
        record("C2 edit at 20 revisions (the oldest deleted)", at_limit);
        let list = client.get_as(writer, &format!("/api/posts/{published}/revisions")).await;
        assert!(list.ok(), "revisions: {}", list.body);
        record("a post's revisions (a page)", list.sample);
        let number = list.body["items"][0]["number"].as_u64().unwrap_or(1);
        let one =
            client.get_as(writer, &format!("/api/posts/{published}/revisions/{number}")).await;
        assert!(one.ok(), "a revision: {}", one.body);
        record("a revision, with its changes", one.sample);
        let restore_path = format!("/api/posts/{published}/revisions/{number}/restore");
        let restored = client.post(writer, &restore_path, &json!({})).await;
        assert!(restored.ok(), "restore: {}", restored.body);
        record("a restore (an edit, itself kept)", restored.sample);
        let draft_id = draft.id();
        let shared =
            client.post(writer, &format!("/api/posts/{draft_id}/preview"), &json!({})).await;
        assert!(shared.ok(), "preview: {}", shared.body);
        record("a preview link shared", shared.sample.clone());
        let page = client.get(shared.body["path"].as_str().unwrap()).await;
        record("its preview page, read by whoever has the link", page.sample);
        let revoked = client.delete(writer, &format!("/api/posts/{draft_id}/preview")).await;
        record("the preview link revoked", revoked.sample);
        let publish = json!({"status": "published"});
        let published_draft = edit(client, writer, &draft_id, round, publish).await;
        record("a draft published (an edit)", published_draft);
    }
    table
}

/// The body of a post by `writer`, its `round`, with `extra` fields.
fn post_body(writer: &str, round: usize, extra: Value) -> Value {
    let mut body = json!({
        "userId": writer,
        "title": format!("Partitioning, part {round}"),
        "content": format!(
            "Round {round}: a post of a few paragraphs.\n\nEach container is partitioned by the \
             key its reads name, so that every read is one partition's.\n\nThe feed keeps the \
             newest posts in one partition."
        ),
        "tags": ["cosmos-db", "modeling"],
    });
    body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    body
}

async fn new_post(client: &Client, writer: &str, extra: Value) -> String {
    let answer = client.post(writer, "/api/posts", &post_body(writer, 0, extra)).await;
    assert!(answer.ok(), "C2: {}", answer.body);
    answer.id()
}

/// An edit of `post` (its text changed by `round`, plus `extra`): the answer's sample.
async fn edit(client: &Client, writer: &str, post: &str, round: usize, extra: Value) -> Sample {
    let mut body = post_body(writer, round + 1, extra);
    body.as_object_mut().unwrap().remove("userId");
    let answer = client.put(writer, &format!("/api/posts/{post}"), &body).await;
    assert!(answer.ok(), "edit: {}", answer.body);
    answer.sample
}

/// Time for the change feed to copy what was just written (it polls every few milliseconds).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// Each post's lateness: when the timer published it, and when it was in Q6, after its time.
struct Lateness {
    due_at: OffsetDateTime,
    published_ms: Vec<f64>,
    in_feed_ms: Vec<f64>,
    /// Posts not published within the time waited.
    missing: usize,
}

/// Schedules `--due` posts for the next tick at least a lead away (20 s for a minute's timer),
/// then polls Q6 until all are there.
async fn measure_scheduled(client: &Client, args: &Args) -> Lateness {
    let writers: Vec<String> = (0..10).map(|n| format!("author{n}")).collect();
    for writer in &writers {
        let created = client
            .post(writer, "/api/users", &json!({"username": format!("Author {writer}")}))
            .await;
        assert!(created.ok(), "C1: {}", created.body);
    }
    let every = Duration::from_secs(args.every);
    let lead = if args.every >= 60 { Duration::from_secs(20) } else { Duration::from_secs(3) };
    let due_at = next_tick(OffsetDateTime::now_utc() + lead, every);
    let publish_at = rfc3339(due_at);
    let mut ids = Vec::new();
    for post in 0..args.due {
        let writer = &writers[post % writers.len()];
        let body = post_body(writer, post, json!({"status": "scheduled", "publishAt": publish_at}));
        let answer = client.post(writer, "/api/posts", &body).await;
        assert!(answer.ok(), "C2 scheduled: {}", answer.body);
        ids.push(answer.id());
    }
    let written = OffsetDateTime::now_utc();
    assert!(written < due_at, "the posts were written after their time: raise the lead");
    println!(
        "## {} posts scheduled for {publish_at} (written by {})\n",
        args.due,
        rfc3339(written)
    );
    let mut in_feed_ms = vec![f64::NAN; ids.len()];
    let deadline = Instant::now() + (due_at - OffsetDateTime::now_utc()).unsigned_abs() + every * 2;
    let pages = ids.len().div_ceil(100);
    while in_feed_ms.iter().any(|at| at.is_nan()) && Instant::now() < deadline {
        let mut continuation: Option<String> = None;
        for _ in 0..pages {
            let path = match &continuation {
                Some(token) => format!("/api/feed?limit=100&continuationToken={token}"),
                None => "/api/feed?limit=100".to_owned(),
            };
            let page = client.get(&path).await;
            let now = OffsetDateTime::now_utc();
            for id in page.item_ids() {
                if let Some(at) = ids.iter().position(|wanted| *wanted == id)
                    && in_feed_ms[at].is_nan()
                {
                    in_feed_ms[at] = ms((now - due_at).unsigned_abs());
                }
            }
            continuation = page.body["continuationToken"].as_str().map(str::to_owned);
            if continuation.is_none() {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut published_ms = Vec::new();
    for id in &ids {
        let post = client.get(&format!("/api/posts/{id}")).await;
        let published = post.body["creationDate"]
            .as_str()
            .and_then(|at| OffsetDateTime::parse(at, &Rfc3339).ok());
        if let Some(at) = published.filter(|_| post.ok()) {
            published_ms.push(ms((at - due_at).unsigned_abs()));
        }
    }
    let missing = ids.len() - published_ms.len();
    Lateness {
        due_at,
        published_ms,
        in_feed_ms: in_feed_ms.into_iter().filter(|at| !at.is_nan()).collect(),
        missing,
    }
}

fn print_scheduled(args: &Args, lateness: &Lateness) {
    let mut published = lateness.published_ms.clone();
    let mut in_feed = lateness.in_feed_ms.clone();
    println!(
        "Due at {} (the timer every {} s, at whole multiples of it); after that time:\n\n\
         | | posts | p50 (ms) | p99 (ms) | last (ms) |\n| --- | ---: | ---: | ---: | ---: |",
        rfc3339(lateness.due_at),
        args.every
    );
    for (what, values) in [
        ("the timer's run began (each post's `creationDate`)", &mut published),
        ("in Q6 (its feed copy, polled every 50 ms)", &mut in_feed),
    ] {
        let count = values.len();
        println!(
            "| {what} | {count} | {:.0} | {:.0} | {:.0} |",
            percentile(values, 50.0),
            percentile(values, 99.0),
            percentile(values, 100.0)
        );
    }
    if lateness.missing > 0 {
        println!("\n{} posts were not published within the time waited.", lateness.missing);
    }
    println!();
}

/// The first whole multiple of `every` since the Unix epoch at or after `at`.
fn next_tick(at: OffsetDateTime, every: Duration) -> OffsetDateTime {
    let every_ns = every.as_nanos() as i128;
    let since = at.unix_timestamp_nanos();
    let tick = (since + every_ns - 1).div_euclid(every_ns) * every_ns;
    OffsetDateTime::from_unix_timestamp_nanos(tick).unwrap()
}

/// `at` as RFC 3339 with its offset, whole seconds.
fn rfc3339(at: OffsetDateTime) -> String {
    at.replace_nanosecond(0).unwrap().format(&Rfc3339).unwrap().replace('Z', "+00:00")
}
