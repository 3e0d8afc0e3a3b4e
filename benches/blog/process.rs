//! Figures of the `handler` executable itself, run as a child process: cold start, resident
//! memory idle and under load, and the size of what is deployed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::client::{Client, Stats, ms, percentile};
use crate::data::{self, Rng};

/// Where cargo put this bench's executable: `<target>/release/deps/blog-…`; the handler is
/// `<target>/release/handler`.
pub(crate) fn release_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the bench's own path");
    match exe.parent().and_then(Path::parent) {
        Some(dir) if dir.ends_with("release") => dir.to_owned(),
        // Started from elsewhere (a copy of the bench): the default target directory.
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release"),
    }
}

/// The release `handler`, built first when absent (a few minutes on 2 cores).
pub(crate) fn handler_binary() -> Result<PathBuf, String> {
    let path = release_dir().join("handler");
    if path.exists() {
        return Ok(path);
    }
    eprintln!("target/release/handler is missing: running `cargo build --release --bin handler` …");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "--bin", "handler"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .map_err(|error| format!("cannot run cargo: {error}"))?;
    if status.success() && path.exists() {
        Ok(path)
    } else {
        Err(format!("`cargo build --release --bin handler` failed ({status})"))
    }
}

/// A `handler` child on an empty data directory and a free loopback port.
struct Handler {
    child: Child,
    base: String,
    _data: tempfile::TempDir,
}

/// `cargo run`'s configuration of the handler on `data` and a port that was free a moment ago
/// (the bench is the only one binding here): the child, and its base URL.
pub(crate) fn spawn_on(binary: &Path, data: &Path) -> (Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(binary)
        .env("BLOG_DATA_DIR", data)
        .env("BLOG_LISTEN", format!("127.0.0.1:{port}"))
        .env("RUST_LOG", "warn")
        .env("BLOG_AUTH", "development")
        // Each simulated user writes far faster than a person: no per-user limit.
        .env("BLOG_WRITES_PER_MINUTE", "off")
        .env_remove("CosmosDB")
        .env_remove("CosmosDB__accountEndpoint")
        .env_remove("FUNCTIONS_CUSTOMHANDLER_PORT")
        .env_remove("BLOG_CHANGE_FEED")
        .env_remove("BLOG_SCRIPTS")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the handler starts");
    (child, format!("http://127.0.0.1:{port}"))
}

impl Handler {
    fn spawn(binary: &Path) -> Handler {
        let data = tempfile::tempdir().expect("a temporary directory");
        let (child, base) = spawn_on(binary, data.path());
        Handler { child, base, _data: data }
    }

    /// Resident memory of the child now, from /proc (Linux only).
    fn rss_kib(&self) -> Option<u64> {
        status_field(self.child.id(), "VmRSS:")
    }

    fn peak_rss_kib(&self) -> Option<u64> {
        status_field(self.child.id(), "VmHWM:")
    }
}

impl Drop for Handler {
    fn drop(&mut self) {
        // Our own child, by its pid.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn status_field(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Polls `GET /` every millisecond until it answers 200; the time since `started`.
pub(crate) async fn first_answer(base: &str, started: Instant) -> Duration {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(2)).build().unwrap();
    loop {
        if let Ok(response) = http.get(format!("{base}/")).send().await
            && response.status().is_success()
        {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the handler did not answer GET / within 300 s"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

pub(crate) struct ProcessFigures {
    pub cold_start_runs: usize,
    pub cold_start_p50_ms: f64,
    pub cold_start_max_ms: f64,
    pub rss_idle_kib: Option<u64>,
    pub rss_load_peak_kib: Option<u64>,
    pub load: Stats,
    pub load_per_second: f64,
    /// Posts seeded before the load.
    pub seeded_posts: usize,
    /// The release build that was started (with the embedded store).
    pub binary: PathBuf,
    pub binary_bytes: u64,
    pub binary_kind: &'static str,
    /// `dist/app/handler`, what is deployed, when `./package.sh` has built it.
    pub packaged: Option<(PathBuf, u64)>,
}

/// Cold start `runs` times; then, on the last child: idle memory, a small data set (`users`
/// users of 5 posts each), and a closed-loop Q2/Q6 load for `load_for` with `concurrency`
/// clients while memory is sampled.
pub(crate) async fn measure(
    binary: &Path,
    runs: usize,
    users: usize,
    concurrency: usize,
    load_for: Duration,
) -> ProcessFigures {
    let mut starts = Vec::with_capacity(runs);
    let mut last = None;
    for _ in 0..runs {
        let started = Instant::now();
        let handler = Handler::spawn(binary);
        starts.push(ms(first_answer(&handler.base, started).await));
        last = Some(handler);
    }
    let handler = last.expect("at least one run");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_idle_kib = handler.rss_kib();

    let client = Client::new(handler.base.clone());
    let posts = seed_small(&client, users).await;
    let (load, load_per_second, sampled_peak) =
        load_with_memory(&handler, &client, &posts, concurrency, load_for).await;
    let rss_load_peak_kib = handler.peak_rss_kib().or(sampled_peak);

    let size = |path: &Path| std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let packaged = Path::new(env!("CARGO_MANIFEST_DIR")).join("dist/app/handler");
    let packaged = packaged.exists().then(|| (packaged.clone(), size(&packaged)));
    ProcessFigures {
        cold_start_runs: runs,
        cold_start_p50_ms: percentile(&mut starts.clone(), 50.0),
        cold_start_max_ms: starts.iter().copied().fold(0.0, f64::max),
        rss_idle_kib,
        rss_load_peak_kib,
        load,
        load_per_second,
        seeded_posts: posts.len(),
        binary: binary.to_owned(),
        binary_bytes: size(binary),
        binary_kind: if binary.components().any(|part| part.as_os_str() == "release") {
            "release build with the embedded store, stripped"
        } else {
            "not a release build: its figures are not the handler's"
        },
        packaged,
    }
}

/// `users` users with 5 posts and 3 comments each: with 20, enough for the feed to be full.
async fn seed_small(client: &Client, users: usize) -> Vec<String> {
    let mut rng = Rng::new(11);
    let mut posts = Vec::new();
    for u in 0..users {
        let user = client
            .post(&format!("rss-{u}"), "/api/users", &json!({ "username": format!("rss-{u}") }))
            .await
            .id();
        for _ in 0..5 {
            let body = json!({ "userId": user, "title": data::text(&mut rng, (35, 65)), "content": data::text(&mut rng, (1_000, 5_000)) });
            let post = client.post(&user, "/api/posts", &body).await.id();
            for _ in 0..3 {
                let body = json!({ "userId": user, "content": data::text(&mut rng, (100, 300)) });
                client.post(&user, &format!("/api/posts/{post}/comments"), &body).await;
            }
            posts.push(post);
        }
    }
    posts
}

/// Half the clients read random posts (Q2), half the feed (Q6, 100 posts), until `duration`;
/// the child's VmRSS is sampled every 100 ms.
async fn load_with_memory(
    handler: &Handler,
    client: &Client,
    posts: &[String],
    concurrency: usize,
    duration: Duration,
) -> (Stats, f64, Option<u64>) {
    let deadline = Instant::now() + duration;
    let started = Instant::now();
    let tasks: Vec<_> = (0..concurrency)
        .map(|task| {
            let (client, posts) = (client.clone(), posts.to_vec());
            let mut rng = Rng::new(task as u64);
            tokio::spawn(async move {
                let mut samples = Vec::new();
                while Instant::now() < deadline {
                    let path = if task % 2 == 0 {
                        format!("/api/posts/{}", posts[rng.index(posts.len())])
                    } else {
                        "/api/feed?limit=100".to_owned()
                    };
                    samples.push(client.get(&path).await.sample);
                }
                samples
            })
        })
        .collect();
    let mut peak = None;
    while Instant::now() < deadline {
        peak = peak.max(handler.rss_kib());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut samples = Vec::new();
    for task in tasks {
        samples.extend(task.await.expect("a load task"));
    }
    let per_second = samples.len() as f64 / started.elapsed().as_secs_f64();
    (Stats::of(&samples), per_second, peak)
}

/// The machine, the commit and the build a bench measured (benches/search.rs, writers.rs;
/// benches/blog.rs prints its own, with the figures of its process).
#[allow(dead_code)]
pub(crate) fn machine(binary: &Path) -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split(':').nth(1))
                .map(|name| name.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into());
    let commit = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .unwrap_or_default();
    let kind = if binary.components().any(|part| part.as_os_str() == "release") {
        "release build"
    } else {
        "not a release build: its times are not the handler's"
    };
    format!(
        "machine: {cpus} CPUs ({model}); commit `{commit}`; handler: {} ({kind}); embedded store\n",
        binary.display()
    )
}
