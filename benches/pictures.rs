//! Pictures on the `handler` executable: how long an upload of a phone's photo takes, and how
//! much memory the handler holds at its peak for the largest photo it takes and for eight large
//! uploads at once. Not a test: it asserts nothing (BENCHMARKS.md, "Pictures").
//!
//!     cargo bench --bench pictures                            # target/release/handler
//!     cargo bench --bench pictures -- --handler OTHER_BINARY  # another build, to compare
//!     cargo test --bench pictures -- --smoke --handler target/debug/handler  # every part once, seconds
//!
//! Each figure is taken on a handler of its own (embedded store, an empty data directory), so
//! that a peak is that case's alone. Memory is Linux's: the process's `VmRSS` at rest, after one
//! small picture was taken (the decoders' code and the allocator's arenas are then its own), and
//! its `VmHWM` after the case.
//!
//! The last case is what clients that are not signed in can hold while a writer uploads: many
//! connections to the picture routes with every `Content-Type`, each declaring 10 MiB (answered
//! 401 from their heads), and many page forms of 256 KiB, the most a form from nobody is read,
//! each sent as slowly as the minimum rate allows; the writer's upload time beside them, and the
//! handler's peak memory.
//!
//! `--smoke` runs every case on small photos (640 × 480 and 800 × 600), 3 uploads, 3 reads and 2
//! at once, and a few anonymous connections: it shows that the bench runs, not what it measures
//! (`benches/smoke.sh`, in CI).

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

const MIB: u64 = 1024 * 1024;

/// The photos and counts of each case.
struct Shape {
    /// A phone's photo, width and height.
    phone: (u32, u32),
    /// The largest photo the default memory takes.
    largest: (u32, u32),
    /// Uploads of a phone's photo in turn, the first two untimed.
    uploads: u32,
    /// Reads of the last one.
    reads: usize,
    /// The largest photo uploaded this many times at once.
    crowd: usize,
    /// Anonymous connections to the picture routes, declaring 10 MiB each.
    anonymous_uploads: usize,
    /// Anonymous page forms of 256 KiB, sent at the slowest pace the handler reads.
    anonymous_forms: usize,
}

impl Shape {
    const FULL: Shape = Shape {
        phone: (4_032, 3_024),
        largest: (6_000, 4_000),
        uploads: 12,
        reads: 50,
        crowd: 8,
        anonymous_uploads: 504,
        anonymous_forms: 200,
    };
    const SMOKE: Shape = Shape {
        phone: (640, 480),
        largest: (800, 600),
        uploads: 3,
        reads: 3,
        crowd: 2,
        anonymous_uploads: 21,
        anonymous_forms: 4,
    };
}

fn main() {
    let mut arguments = std::env::args().skip(1);
    let mut binary = None;
    let mut shape = Shape::FULL;
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--bench" => {} // cargo bench passes it to every bench
            "--handler" => {
                binary = Some(arguments.next().map(PathBuf::from).expect("--handler needs a path"))
            }
            "--smoke" => shape = Shape::SMOKE,
            other => panic!(
                "unknown argument {other:?}: cargo bench --bench pictures -- [--handler PATH] [--smoke]"
            ),
        }
    }
    let binary = binary.unwrap_or_else(release_handler);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(run(&binary, &shape));
}

/// `target/release/handler`, built first when absent.
fn release_handler() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/handler");
    if !path.exists() {
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "--release", "--bin", "handler"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(status.success(), "cargo build --release --bin handler");
    }
    path
}

async fn run(binary: &Path, shape: &Shape) {
    let ((phone_width, phone_height), (largest_width, largest_height)) =
        (shape.phone, shape.largest);
    let phone_photo = photo_jpeg(phone_width, phone_height, 1, 20);
    let largest = photo_jpeg(largest_width, largest_height, 2, 8);
    println!("## Pictures (`{}`)\n", binary.display());
    println!("| case | figure |");
    println!("| --- | --- |");

    let handler = Handler::start(binary);
    let post = handler.writers_post("timer").await;
    let at_rest = handler.at_rest(&post).await;
    let mut times = Vec::new();
    for round in 0..shape.uploads {
        // A photo of its own each time: nothing is stored already.
        let photo = if round == 0 {
            phone_photo.clone()
        } else {
            photo_jpeg(phone_width, phone_height, 100 + round, 20)
        };
        let started = Instant::now();
        let status = handler.upload(&post, photo).await;
        let took = started.elapsed();
        assert_eq!(status, 201);
        if round >= 2 {
            times.push(took);
        }
    }
    times.sort();
    let (rss, peak) = handler.memory();
    // The last photo served back, 50 times in turn: its bytes read and hashed.
    let url = handler.last_url.lock().unwrap().clone().expect("a picture was taken");
    let mut serving = Vec::new();
    for _ in 0..shape.reads {
        let started = Instant::now();
        let answer = handler.client.get(format!("{}{url}", handler.base)).send().await.unwrap();
        let bytes = answer.bytes().await.unwrap().len();
        serving.push((started.elapsed(), bytes));
    }
    serving.sort();
    println!(
        "| a {phone_width} × {phone_height} photo of {:.1} MB uploaded ({} in turn, after 2 untimed): median, fastest, slowest | {} ms, {} ms, {} ms |",
        phone_photo.len() as f64 / 1e6,
        times.len(),
        times[times.len() / 2].as_millis(),
        times[0].as_millis(),
        times[times.len() - 1].as_millis()
    );
    println!(
        "| that photo as stored ({:.1} MB) served back ({} in turn): median, fastest | {:.2} ms, {:.2} ms |",
        serving[0].1 as f64 / 1e6,
        serving.len(),
        serving[serving.len() / 2].0.as_secs_f64() * 1e3,
        serving[0].0.as_secs_f64() * 1e3
    );
    println!(
        "| the same handler: at rest, after, peak | {} MiB, {} MiB, {} MiB |",
        at_rest / MIB,
        rss / MIB,
        peak / MIB
    );
    drop(handler);

    let handler = Handler::start(binary);
    let post = handler.writers_post("largest").await;
    let at_rest = handler.at_rest(&post).await;
    let started = Instant::now();
    let status = handler.upload(&post, largest.clone()).await;
    let took = started.elapsed();
    let (_, peak) = handler.memory();
    println!(
        "| a {largest_width} × {largest_height} photo of {:.1} MB (6,000 × 4,000 is the largest the default 256 MiB takes): answer, time, peak above rest | {status}, {} ms, {} MiB |",
        largest.len() as f64 / 1e6,
        took.as_millis(),
        (peak - at_rest) / MIB
    );
    drop(handler);

    let handler = Handler::start(binary);
    let post = handler.writers_post("crowd").await;
    let at_rest = handler.at_rest(&post).await;
    let started = Instant::now();
    let uploads = (0..shape.crowd).map(|_| handler.upload(&post, largest.clone()));
    let statuses = futures::future::join_all(uploads).await;
    let took = started.elapsed();
    let (_, peak) = handler.memory();
    let count = |status| statuses.iter().filter(|answer| **answer == status).count();
    println!(
        "| {} of that photo at once: 201, 503, time, peak above rest | {}, {}, {} ms, {} MiB |",
        shape.crowd,
        count(201),
        count(503),
        took.as_millis(),
        (peak - at_rest) / MIB
    );
    drop(handler);

    anonymous_holds(binary, shape, &largest).await;
}

/// The picture routes, and every `Content-Type` a body may claim there.
const PICTURE_ROUTES: [&str; 3] = ["/write", "/posts/{post}/edit", "/api/posts/{post}/pictures"];
const CLAIMED_TYPES: [&str; 7] = [
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=",
    "multipart/form-data; boundary=x",
    "text/plain",
    "image/png",
    "application/octet-stream",
    "",
];

/// The last case: see the module's documentation.
async fn anonymous_holds(binary: &Path, shape: &Shape, photo: &[u8]) {
    let handler = Handler::start(binary);
    let post = handler.writers_post("writer").await;
    let at_rest = handler.at_rest(&post).await;
    let address = handler.base.trim_start_matches("http://").to_owned();
    let started = Instant::now();
    // 10 MiB declared to a picture route, 1 KiB sent: each should be answered from its head.
    let uploads = (0..shape.anonymous_uploads).map(|n| {
        let route = PICTURE_ROUTES[n % PICTURE_ROUTES.len()].replace("{post}", &post);
        let claimed = CLAIMED_TYPES[(n / PICTURE_ROUTES.len()) % CLAIMED_TYPES.len()];
        let content_type =
            if claimed.is_empty() { String::new() } else { format!("Content-Type: {claimed}\r\n") };
        let head = format!(
            "POST {route} HTTP/1.1\r\nHost: x\r\n{content_type}Content-Length: {}\r\n\r\n",
            10 * MIB
        );
        let address = address.clone();
        tokio::spawn(async move {
            let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
            stream.write_all(head.as_bytes()).await.unwrap();
            let _ = stream.write_all(&[b'a'; 1024]).await;
            status_of(&mut stream).await
        })
    });
    let uploads: Vec<_> = uploads.collect();
    // A comment form of 256 KiB from nobody, sent over 11.5 s: within the 10 s grace and the
    // 128 KiB/s after it, so it is read whole, then answered 401 (what was typed comes back).
    let form_bytes = 256 * 1024;
    let forms = (0..shape.anonymous_forms).map(|_| {
        let head = format!(
            "POST /posts/{post}/comments HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {form_bytes}\r\n\r\ncontent="
        );
        let address = address.clone();
        tokio::spawn(async move {
            let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
            stream.write_all(head.as_bytes()).await.unwrap();
            let mut left = form_bytes - "content=".len();
            let slice = 1024;
            while left > 0 {
                let now = slice.min(left);
                if stream.write_all(&vec![b'a'; now]).await.is_err() {
                    break;
                }
                left -= now;
                tokio::time::sleep(Duration::from_millis(45)).await;
            }
            status_of(&mut stream).await
        })
    });
    let forms: Vec<_> = forms.collect();
    // The writer's photos while they are being sent: the largest first (4.5 MB, more than six
    // claims of 10 MiB would leave of the default 64 MiB), then small ones.
    let mut times = Vec::new();
    for round in 0..shape.uploads.min(5) {
        let photo =
            if round == 0 { photo.to_vec() } else { photo_jpeg(640 + round, 480, 300 + round, 20) };
        let took = Instant::now();
        let status = handler.upload(&post, photo).await;
        times.push((took.elapsed(), status));
    }
    let mut statuses = std::collections::BTreeMap::<String, usize>::new();
    for task in uploads.into_iter().chain(forms) {
        *statuses.entry(task.await.unwrap()).or_default() += 1;
    }
    let (_, peak) = handler.memory();
    let writer: Vec<String> =
        times.iter().map(|(took, status)| format!("{status} in {} ms", took.as_millis())).collect();
    println!(
        "| {} anonymous connections to the picture routes (10 MiB declared, every Content-Type) and {} anonymous 256 KiB forms sent over 11.5 s, at once: their answers; the writer's photos meanwhile; the handler's peak above rest; all done in | {statuses:?}; {}; {} MiB; {} ms |",
        shape.anonymous_uploads,
        shape.anonymous_forms,
        writer.join(", "),
        (peak - at_rest) / MIB,
        started.elapsed().as_millis()
    );
}

/// The status code the server answered on `stream`, or why there was none.
async fn status_of(stream: &mut tokio::net::TcpStream) -> String {
    let mut answer = Vec::new();
    let mut buffer = [0; 1024];
    let read = tokio::time::timeout(Duration::from_secs(60), async {
        while !answer.windows(2).any(|pair| pair == b"\r\n") {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(read) => answer.extend_from_slice(&buffer[..read]),
            }
        }
    })
    .await;
    if read.is_err() {
        return "no answer in 60 s".to_owned();
    }
    String::from_utf8_lossy(&answer).split(' ').nth(1).unwrap_or("closed").to_owned()
}

/// A `width` × `height` JPEG that an encoder takes for a photo: gradients with `grain` of noise,
/// quality 90.
fn photo_jpeg(width: u32, height: u32, seed: u32, grain: u32) -> Vec<u8> {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    let pixels = image::RgbImage::from_fn(width, height, |x, y| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let noise = (state % grain) as u8;
        let (r, g, b) = ((x * 255 / width) as u8, (y * 255 / height) as u8, ((x + y) % 256) as u8);
        image::Rgb([r.saturating_add(noise), g.saturating_add(noise), b.saturating_add(noise)])
    });
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90)
        .encode_image(&pixels)
        .unwrap();
    jpeg
}

struct Handler {
    child: Child,
    base: String,
    client: reqwest::Client,
    writer: std::sync::OnceLock<String>,
    last_url: std::sync::Mutex<Option<String>>,
    _data: tempfile::TempDir,
}

impl Handler {
    fn start(binary: &Path) -> Handler {
        let data = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(binary)
            .env("BLOG_DATA_DIR", data.path())
            .env("BLOG_LISTEN", format!("127.0.0.1:{port}"))
            .env("RUST_LOG", "warn")
            .env("BLOG_AUTH", "development")
            .env("BLOG_WRITES_PER_MINUTE", "off")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::builder().timeout(Duration::from_secs(300)).build().unwrap();
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Handler {
            child,
            base,
            client,
            writer: std::sync::OnceLock::new(),
            last_url: Default::default(),
            _data: data,
        }
    }

    async fn writers_post(&self, writer: &str) -> String {
        self.writer.set(writer.to_owned()).unwrap();
        let user =
            self.client.post(format!("{}/api/users", self.base)).header("x-dev-user", writer);
        user.json(&serde_json::json!({"username": writer})).send().await.unwrap();
        let post =
            self.client.post(format!("{}/api/posts", self.base)).header("x-dev-user", writer);
        let post = post
            .json(&serde_json::json!({"userId": writer, "title": "Photos", "content": "Some."}))
            .send()
            .await
            .unwrap();
        post.json::<serde_json::Value>().await.unwrap()["id"].as_str().unwrap().to_owned()
    }

    /// Uploads `bytes` to `post` as its writer (each handler here has one writer, its post's).
    async fn upload(&self, post: &str, bytes: Vec<u8>) -> u16 {
        let request = self.client.post(format!("{}/api/posts/{post}/pictures", self.base));
        let request = request
            .header("content-type", "image/jpeg")
            .header("x-dev-user", self.writer.get().unwrap());
        let answer = request.body(bytes).send().await.unwrap();
        let status = answer.status().as_u16();
        if status == 201 {
            let body = answer.json::<serde_json::Value>().await.unwrap();
            *self.last_url.lock().unwrap() = body["url"].as_str().map(str::to_owned);
        }
        status
    }

    /// The memory at rest, once a small picture was taken.
    async fn at_rest(&self, post: &str) -> u64 {
        assert_eq!(self.upload(post, photo_jpeg(640, 480, 9, 8)).await, 201);
        self.memory().0
    }

    /// `VmRSS` and `VmHWM`, in bytes.
    fn memory(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let field = |name: &str| {
            let line = status.lines().find(|line| line.starts_with(name)).unwrap();
            line[name.len()..].trim().trim_end_matches("kB").trim().parse::<u64>().unwrap() * 1024
        };
        (field("VmRSS:"), field("VmHWM:"))
    }
}

impl Drop for Handler {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
