//! The benchmark: the article's request table on our code, V1 against V3 on the same data, and
//! the figures that matter for a serverless handler. Not a test: it asserts nothing about time.
//!
//!     cargo bench --bench blog                    # default scale, under a minute on 2 cores
//!     cargo bench --bench blog -- --quick         # smaller, about 20 s
//!     cargo bench --bench blog -- --users 80      # 10x the default, about 12 minutes
//!     cargo test --bench blog -- --smoke --handler target/debug/handler   # every part once, seconds
//!
//! `--smoke` runs every part of the bench on the least data that still reaches it (2 users of 2
//! posts, a few requests each, 0.2 s loads, one deleted post of 3 comments and 3 likes, one cold
//! start): it shows that the bench runs, not what it measures. `benches/smoke.sh` runs it in CI,
//! in the test profile. `--handler` names the `handler` executable the process figures start (by
//! default `target/release/handler`, built when absent).
//!
//! It writes nothing into the repository: the data lives in a temporary directory, and the
//! figures go to stdout as Markdown (see BENCHMARKS.md). With `CosmosDB` or
//! `CosmosDB__accountEndpoint` set, the in-process handler talks to that account instead of the
//! embedded store (use an empty `COSMOS_DATABASE`: the data set is written into it).

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

#[path = "blog/client.rs"]
mod client;
#[path = "blog/data.rs"]
mod data;
#[path = "blog/load.rs"]
mod load;
#[path = "blog/process.rs"]
mod process;
#[path = "blog/requests.rs"]
mod requests;
#[path = "blog/serving.rs"]
mod serving;
#[path = "blog/v1.rs"]
mod v1;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use blog::AppState;
use blog::Blog;
use blog::testing::changefeed::Function;
use blog::testing::changefeed::processor::Deliveries;
use blog::{Backend, Config};

use client::Client;
use data::DataSet;
use load::Loaded;

/// The command line: `cargo bench --bench blog -- [--quick] [--users N] …`.
struct Args {
    users: usize,
    seed: u64,
    iterations: usize,
    v1_iterations: usize,
    feed_limit: u32,
    in_flight: usize,
    concurrency: usize,
    load_for: Duration,
    propagation_samples: usize,
    cold_starts: usize,
    /// Users of 5 posts each seeded in the handler process before its load.
    process_users: usize,
    skip_process: bool,
    /// At most this many posts per user, and comments per post (`--smoke`).
    trim: Option<(usize, usize)>,
    /// What C7 deletes: posts, each with comments and likes.
    doomed: requests::Doomed,
    /// Posts the change-feed cost is measured on, after the feed's 100.
    change_feed_samples: usize,
    handler: Option<PathBuf>,
}

impl Args {
    fn parse() -> Args {
        let mut args = Args {
            users: 8,
            seed: 42,
            iterations: 200,
            v1_iterations: 50,
            feed_limit: 100,
            in_flight: 16,
            concurrency: 16,
            load_for: Duration::from_secs(5),
            propagation_samples: 20,
            cold_starts: 5,
            process_users: 20,
            skip_process: false,
            trim: None,
            doomed: requests::Doomed::ARTICLE,
            change_feed_samples: 20,
            handler: None,
        };
        let mut given = std::env::args().skip(1);
        while let Some(flag) = given.next() {
            let mut value = |name: &str| -> u64 {
                given
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("{name} needs a whole number"))
            };
            match flag.as_str() {
                "--bench" => {} // cargo bench passes it to every bench
                "--quick" => {
                    args.users = 6;
                    args.iterations = 50;
                    args.v1_iterations = 15;
                    args.load_for = Duration::from_secs(2);
                    args.propagation_samples = 10;
                    args.cold_starts = 3;
                }
                "--smoke" => {
                    args.users = 2;
                    args.iterations = 3;
                    args.v1_iterations = 1;
                    args.in_flight = 2;
                    args.concurrency = 2;
                    args.load_for = Duration::from_millis(200);
                    args.propagation_samples = 2;
                    args.cold_starts = 1;
                    args.process_users = 1;
                    args.trim = Some((2, 3));
                    args.doomed = requests::Doomed { posts: 1, comments: 3, likes: 3 };
                    args.change_feed_samples = 2;
                }
                "--handler" => {
                    args.handler = Some(
                        given
                            .next()
                            .map(PathBuf::from)
                            .unwrap_or_else(|| panic!("--handler needs a path")),
                    )
                }
                "--users" => args.users = value("--users") as usize,
                "--seed" => args.seed = value("--seed"),
                "--iterations" => args.iterations = value("--iterations") as usize,
                "--v1-iterations" => args.v1_iterations = value("--v1-iterations") as usize,
                "--feed-limit" => args.feed_limit = value("--feed-limit").clamp(1, 100) as u32,
                "--concurrency" => args.concurrency = value("--concurrency") as usize,
                "--load-seconds" => args.load_for = Duration::from_secs(value("--load-seconds")),
                "--propagation-samples" => {
                    args.propagation_samples = value("--propagation-samples") as usize
                }
                "--no-process" => args.skip_process = true,
                "--help" | "-h" => {
                    println!(
                        "cargo bench --bench blog -- [--quick | --smoke] [--handler PATH] [--users N=8] [--seed S=42] [--iterations N=200] \
                         [--v1-iterations N=50] [--feed-limit X=100] [--concurrency C=16] [--load-seconds S=5] [--propagation-samples N=20] [--no-process]"
                    );
                    std::process::exit(0);
                }
                other => panic!("unknown argument {other:?}; try --help"),
            }
        }
        args
    }
}

/// The handler, in this process, on a fresh temporary data directory (or the configured
/// account), with the local change-feed processors on.
struct InProcess {
    client: Client,
    state: AppState,
    /// What the local change-feed processors delivered (`None` against an account).
    deliveries: Option<Deliveries>,
    embedded: bool,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    _data: Option<tempfile::TempDir>,
}

impl InProcess {
    async fn start() -> InProcess {
        // The environment, with writes signed in by the `x-dev-user` header unless BLOG_AUTH
        // says otherwise (the bench writes as each of its users).
        let environment =
            |name: &str| std::env::var(name).ok().filter(|value| !value.trim().is_empty());
        let mut config = Config::from_lookup(|name| match name {
            "BLOG_AUTH" => environment(name).or_else(|| Some("development".to_owned())),
            // Each simulated user writes far faster than a person: no per-user limit.
            "BLOG_WRITES_PER_MINUTE" => environment(name).or_else(|| Some("off".to_owned())),
            _ => environment(name),
        })
        .unwrap_or_else(|error| panic!("configuration: {error}"));
        config.listen = "127.0.0.1:0".parse().unwrap();
        let mut data = None;
        if let Backend::Embedded { data_dir } = &mut config.backend {
            let temp = tempfile::tempdir().expect("a temporary directory");
            *data_dir = temp.path().to_owned();
            data = Some(temp);
        }
        let embedded = data.is_some();
        let blog = Blog::open(&config)
            .await
            .unwrap_or_else(|error| panic!("cannot open the store: {error}"));
        let state = blog.state.clone();
        let deliveries = blog.deliveries();
        let listener = tokio::net::TcpListener::bind(config.listen).await.expect("a loopback port");
        let client = Client::new(format!("http://{}", listener.local_addr().unwrap()));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(blog.serve(listener, async move {
            let _ = stopped.await;
        }));
        InProcess { client, state, deliveries, embedded, stop, server, _data: data }
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.server.await;
    }
}

// The setting made before any thread starts is an `unsafe` call (see it).
#[allow(unsafe_code)]
fn main() {
    // SAFETY: the first statement of `main`: no runtime and no other thread exist yet.
    unsafe { blog::quiet_library_backtraces() };
    tokio::runtime::Runtime::new().expect("a Tokio runtime").block_on(run());
}

async fn run() {
    let args = Args::parse();
    let run_started = Instant::now();
    println!("# Benchmark run\n");
    println!("{}", machine());

    let handler = InProcess::start().await;
    println!(
        "store: {}\n",
        if handler.embedded {
            "embedded (the SDK's in-memory emulator + journal in a temp dir)"
        } else {
            "the Cosmos DB account from the environment"
        }
    );

    // The data set, loaded through the API.
    let mut data = DataSet::generate(args.seed, args.users);
    if let Some((posts, comments)) = args.trim {
        data.trim(posts, comments);
    }
    println!(
        "data set (seed {}): {} users, {} posts, {} comments, {} likes\n",
        args.seed,
        args.users,
        data.post_count(),
        data.comment_count(),
        data.like_count()
    );
    // Principal ids unique to this run (they matter against a persistent account).
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let run = format!("r{}", since_epoch.as_millis() % 1_000_000_000);
    let loaded = load::load(&handler.client, &data, args.in_flight, &run).await;
    let settle = settle(&handler, &data, &loaded).await;
    print_load(&loaded, settle);
    if let Some(deliveries) = &handler.deliveries {
        print_deliveries(deliveries);
    }

    // The ten requests (V3, through HTTP), then V1 through the Store on the same data.
    let plan = requests::Plan {
        client: &handler.client,
        loaded: &loaded,
        iterations: args.iterations,
        feed_limit: args.feed_limit,
        seed: args.seed,
        run: &run,
        feed_cache: &handler.state.feed,
        tag_cache: &handler.state.tag_posts,
        doomed: args.doomed,
    };
    let rows = requests::measure_all(&plan).await;
    print_requests(&rows, args.iterations);
    print_pages(&requests::measure_pages(&plan).await, args.iterations);
    print_beyond_article(&requests::measure_beyond_article(&plan).await);
    let v1_rows = v1::measure_all(
        &handler.state.store,
        &loaded,
        args.v1_iterations,
        args.feed_limit,
        args.seed,
    )
    .await;
    print_v1(&v1_rows, &rows, args.v1_iterations);

    // Serving figures.
    let mut throughputs = Vec::new();
    let shape = serving::LoadShape {
        feed_limit: args.feed_limit,
        concurrency: args.concurrency,
        duration: args.load_for,
        seed: args.seed,
    };
    for request in
        ["Q2", "Q6 uncached", "Q6", "front page", "tag page", "post page", "post page, random"]
    {
        throughputs.push(
            serving::throughput(&handler.client, &loaded, &handler.state.feed, request, &shape)
                .await,
        );
    }
    // The front page again with one client: its Cosmos queries per second do not follow traffic.
    let one_client = serving::LoadShape { concurrency: 1, ..shape };
    throughputs.push(
        serving::throughput(
            &handler.client,
            &loaded,
            &handler.state.feed,
            "front page",
            &one_client,
        )
        .await,
    );
    print_throughput(&throughputs);
    if handler.embedded {
        // First with nothing else running, then under a steady write load (4 writers, one
        // comment each every 20 ms), which keeps the change-feed processor busy.
        let idle = (args.propagation_samples / 2).max(5);
        let quiet =
            serving::propagation(&handler.client, &loaded, idle, 0, Duration::ZERO, args.seed)
                .await;
        let busy = serving::propagation(
            &handler.client,
            &loaded,
            args.propagation_samples,
            4,
            Duration::from_millis(20),
            args.seed,
        )
        .await;
        print_propagation(&[quiet, busy]);
    } else {
        println!(
            "## Change-feed propagation\n\nskipped: against an account, the Functions host's triggers deliver the change feed, not this process.\n"
        );
    }
    handler.stop().await;
    if handler_is_embedded_default() {
        print_change_feed_cost(&serving::change_feed_cost(args.change_feed_samples).await);
    }

    if args.skip_process {
        println!("## The handler process\n\nskipped (--no-process)\n");
    } else {
        let binary = args.handler.clone().map_or_else(process::handler_binary, Ok);
        match binary {
            Ok(binary) => print_process(
                &process::measure(
                    &binary,
                    args.cold_starts,
                    args.process_users,
                    args.concurrency,
                    args.load_for,
                )
                .await,
            ),
            Err(why) => println!("## The handler process\n\nnot measured: {why}\n"),
        }
    }
    println!("whole run: {:.0} s", run_started.elapsed().as_secs_f64());
}

/// The change-feed cost is measured on a second embedded store; only when the embedded store is
/// built in and no account is configured.
fn handler_is_embedded_default() -> bool {
    matches!(Config::from_env().map(|config| config.backend), Ok(Backend::Embedded { .. }))
}

/// Waits until the change feed has copied every post, with its final counters, into the
/// author's partition of `users` (Q3) and the newest 100 into `feed` (Q6). Against an account,
/// the copies are first built with `rebuild-copies` (the Functions host's triggers are not
/// running in the bench). Returns how long it took after the last write was answered.
async fn settle(handler: &InProcess, data: &DataSet, loaded: &Loaded) -> Duration {
    let started = Instant::now();
    if !handler.embedded {
        blog::testing::changefeed::processor::rebuild_copies(&handler.state, &mut |_| {})
            .await
            .expect("rebuild-copies");
    }
    // What every copy must say: post id -> (comments, likes).
    let mut expected = HashMap::new();
    for (user, plan) in loaded.users.iter().zip(&data.users) {
        for (post_id, post) in user.post_ids.iter().zip(&plan.posts) {
            expected
                .insert(post_id.clone(), (post.comments.len() as u64, post.likers.len() as u64));
        }
    }
    let copies_match = |answer: &client::Answer| {
        answer.body["items"].as_array().is_some_and(|items| {
            items.iter().all(|item| {
                let id = item["id"].as_str().unwrap_or_default();
                expected.get(id)
                    == Some(&(
                        item["commentCount"].as_u64().unwrap_or(u64::MAX),
                        item["likeCount"].as_u64().unwrap_or(u64::MAX),
                    ))
            })
        })
    };
    let feed_size = loaded.posts.len().min(100);
    loop {
        let mut settled = true;
        for user in &loaded.users {
            let answer =
                handler.client.get(&format!("/api/users/{}/posts?limit=100", user.id)).await;
            settled &= answer.item_ids().len() == user.post_ids.len() && copies_match(&answer);
        }
        let feed = handler.client.get("/api/feed?limit=100").await;
        settled &= feed.item_ids().len() == feed_size && copies_match(&feed);
        if settled {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the change feed did not settle within 5 minutes"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .unwrap_or("?")
        .trim();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("0");
    let memory_gib = memory.parse::<f64>().unwrap_or(0.0) / 1024.0 / 1024.0;
    format!("machine: {cpus} CPUs ({model}), {memory_gib:.1} GiB RAM\n")
}

fn print_load(loaded: &Loaded, settle: Duration) {
    println!("## Loading through the API\n");
    println!("| phase | writes | time | writes/s | RU (sum of headers) | operations |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for phase in &loaded.phases {
        println!(
            "| {} | {} | {:.1} s | {:.0} | {:.0} | {} |",
            phase.name,
            phase.writes,
            phase.elapsed.as_secs_f64(),
            phase.writes as f64 / phase.elapsed.as_secs_f64(),
            phase.charge,
            phase.operations
        );
    }
    println!(
        "\nchange feed settled (every copy in Q3 and Q6 shows its post's final counters) {:.2} s after the last write\n",
        settle.as_secs_f64()
    );
}

/// The work of the change-feed functions during the load and the settling, metered by the
/// local processors: it follows the writes, outside any request, so no header counted it.
fn print_deliveries(deliveries: &Deliveries) {
    println!(
        "Change-feed work behind the load (metered by the local processors; no response header shows it):\n"
    );
    println!("| function | batches | items delivered | RU | operations | operations per item |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for function in Function::ALL {
        let delivered = deliveries.of(function);
        println!(
            "| {} | {} | {} | {:.0} | {} | {:.2} |",
            function.name(),
            delivered.batches,
            delivered.items,
            delivered.charge,
            delivered.operations,
            delivered.operations as f64 / delivered.items.max(1) as f64
        );
    }
    println!();
}

fn print_requests(rows: &[requests::RequestRow], iterations: usize) {
    println!("## The ten requests (V3, over HTTP, one at a time, {iterations} each)\n");
    println!(
        "| request | route | p50 ms | p99 ms | RU/request | ops/request | partitions (x-cosmos-partitions) | article V3 | errors |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: | --- | --- | ---: |");
    for row in rows {
        let s = &row.stats;
        println!(
            "| {} | `{}` | {:.2} | {:.2} | {:.2} | {} | {} | {} ms / {} RU | {} |",
            row.request,
            row.route,
            s.p50_ms,
            s.p99_ms,
            s.mean_charge,
            s.operations_text(),
            s.partitions_text(),
            row.article_latency_ms,
            row.article_charge,
            s.errors
        );
    }
    println!();
}

fn print_v1(v1_rows: &[v1::V1Row], v3_rows: &[requests::RequestRow], iterations: usize) {
    println!(
        "## V1 against V3, same data (V1 through the Store in-process, {iterations} each; V3 from the table above)\n"
    );
    println!(
        "| request | V1 ops | V3 ops | ops ratio | V1 RU | V3 RU | RU ratio | V1 p50 ms | V3 p50 ms | latency ratio | V1 partitions | V3 partitions | posts per answer | article V1 → V3 |"
    );
    println!(
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | --- |"
    );
    let ratio = |a: f64, b: f64| if b > 0.0 { format!("{:.1}x", a / b) } else { "n/a".to_owned() };
    for v1 in v1_rows {
        let v3 = &v3_rows.iter().find(|row| row.request == v1.request).expect("a V3 row").stats;
        let (article_v3_ms, article_v3_ru) = requests::ARTICLE_V3
            .iter()
            .find(|(name, _, _)| *name == v1.request)
            .map(|&(_, ms, ru)| (ms, ru))
            .unwrap();
        println!(
            "| {} | {:.1} | {:.1} | {} | {:.2} | {:.2} | {} | {:.2} | {:.2} | {} | {} | {} | {:.1} | {} ms / {} RU → {} ms / {} RU ({:.0}x RU) |",
            v1.request,
            v1.stats.mean_operations,
            v3.mean_operations,
            ratio(v1.stats.mean_operations, v3.mean_operations),
            v1.stats.mean_charge,
            v3.mean_charge,
            ratio(v1.stats.mean_charge, v3.mean_charge),
            v1.stats.p50_ms,
            v3.p50_ms,
            ratio(v1.stats.p50_ms, v3.p50_ms),
            v1.stats.partitions_text(),
            v3.partitions_text(),
            v1.mean_posts,
            v1.article_latency_ms,
            v1.article_charge,
            article_v3_ms,
            article_v3_ru,
            v1.article_charge / article_v3_ru
        );
    }
    println!();
    for v1 in v1_rows {
        println!("- V1 {}: {} (p99 {:.2} ms)", v1.request, v1.how, v1.stats.p99_ms);
    }
    println!();
}

fn print_pages(rows: &[requests::PageRow], iterations: usize) {
    println!("## The pages (HTML, over HTTP, one at a time, {iterations} each)\n");
    println!(
        "| page | route | p50 ms | p99 ms | RU/request | ops/request | partitions (x-cosmos-partitions) | errors |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: | --- | ---: |");
    for row in rows {
        let s = &row.stats;
        println!(
            "| {} | `{}` | {:.2} | {:.2} | {:.2} | {} | {} | {} |",
            row.page,
            row.path,
            s.p50_ms,
            s.p99_ms,
            s.mean_charge,
            s.operations_text(),
            s.partitions_text(),
            s.errors
        );
    }
    println!();
}

fn print_beyond_article(rows: &[requests::ExtraRow]) {
    println!("## Beyond the article: unlike, deletes and the rename (over HTTP, one at a time)\n");
    println!(
        "| request | route | runs | p50 ms | p99 ms | RU/request | ops/request | partitions (x-cosmos-partitions) | errors |"
    );
    println!("| --- | --- | --- | ---: | ---: | ---: | ---: | --- | ---: |");
    for row in rows {
        let s = &row.stats;
        let runs = if row.what.is_empty() {
            s.count.to_string()
        } else {
            format!("{}: {}", s.count, row.what)
        };
        println!(
            "| {} | `{}` | {runs} | {:.2} | {:.2} | {:.2} | {} | {} | {} |",
            row.request,
            row.route,
            s.p50_ms,
            s.p99_ms,
            s.mean_charge,
            s.operations_text(),
            s.partitions_text(),
            s.errors
        );
    }
    println!();
}

fn print_throughput(runs: &[serving::Throughput]) {
    println!("## Throughput on loopback (closed loop, client in the same process)\n");
    println!("| request | clients | time | requests/s | p50 ms | p99 ms | Cosmos ops/s | errors |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for run in runs {
        println!(
            "| {} `{}` | {} | {:.1} s | {:.0} | {:.2} | {:.2} | {:.1} | {} |",
            run.request,
            run.path,
            run.concurrency,
            run.duration.as_secs_f64(),
            run.per_second,
            run.stats.p50_ms,
            run.stats.p99_ms,
            run.operations_per_second,
            run.stats.errors
        );
    }
    println!();
}

fn print_propagation(runs: &[serving::Propagation]) {
    println!("## Change-feed propagation (C2 answered → post in Q6)\n");
    println!("| background writes | posts | p50 ms | p99 ms | max ms | Q6 polls per post |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for p in runs {
        println!(
            "| {:.0} comments/s (C3) | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
            p.background_writes_per_second, p.samples, p.p50_ms, p.p99_ms, p.max_ms, p.mean_polls
        );
    }
    println!();
}

fn print_change_feed_cost(cost: &serving::ChangeFeedCost) {
    println!("## Change-feed work per write (PostsChangeFeed, outside the request)\n");
    println!("| change delivered | deliveries | RU | operations | p50 ms |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for (what, stats) in [
        ("a new post (C2), feed full", &cost.new_post),
        ("a post whose counter moved (C3/C4)", &cost.counter_change),
    ] {
        println!(
            "| {what} | {} | {:.2} | {} | {:.2} |",
            stats.count,
            stats.mean_charge,
            stats.operations_text(),
            stats.p50_ms
        );
    }
    println!();
}

fn print_process(p: &process::ProcessFigures) {
    let mib = |kib: Option<u64>| {
        kib.map_or("n/a".to_owned(), |kib| format!("{:.1} MiB", kib as f64 / 1024.0))
    };
    println!("## The handler process ({}, embedded store, empty data dir)\n", p.binary.display());
    println!(
        "- cold start to first `GET /` 200: p50 {:.1} ms, max {:.1} ms over {} starts",
        p.cold_start_p50_ms, p.cold_start_max_ms, p.cold_start_runs
    );
    println!("- RSS idle (1 s after start, empty store): {}", mib(p.rss_idle_kib));
    println!(
        "- RSS peak under load (VmHWM; {} posts seeded, Q2 + Q6?limit=100, {:.0} requests/s, p50 {:.2} ms, p99 {:.2} ms): {}",
        p.seeded_posts,
        p.load_per_second,
        p.load.p50_ms,
        p.load.p99_ms,
        mib(p.rss_load_peak_kib)
    );
    println!(
        "- binary: {}: {:.1} MiB ({})",
        p.binary.display(),
        p.binary_bytes as f64 / 1024.0 / 1024.0,
        p.binary_kind
    );
    if let Some((path, bytes)) = &p.packaged {
        println!(
            "- packaged binary: {}: {:.1} MiB (./package.sh: --no-default-features, no embedded store, glibc 2.28)",
            path.display(),
            *bytes as f64 / 1024.0 / 1024.0
        );
    } else {
        println!("- packaged binary: dist/app/handler absent (run ./package.sh to measure it)");
    }
    println!();
}
