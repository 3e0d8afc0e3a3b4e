//! A running handler on the embedded store, and a small HTTP client for it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub(crate) mod azurite;
pub(crate) mod binary;
pub(crate) mod forms;
pub(crate) mod host;
pub(crate) mod hostile;
pub(crate) mod wire;

use blog::AppState;
use blog::Blog;
use blog::testing::changefeed::processor::Deliveries;
use blog::{Backend, ChangeFeedMode, Config};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub(crate) struct TestApp {
    pub base: String,
    /// The blog's public address, which its pages and feeds link to: `BLOG_PUBLIC_URL` where the
    /// test set it, else the listener's as the blog names it (`http://localhost:<port>`).
    pub public: String,
    pub client: reqwest::Client,
    pub data_dir: PathBuf,
    /// Direct access to the store and scripts, for tests that set up or inspect what the API
    /// cannot.
    pub state: AppState,
    /// What the local change-feed processors delivered (`None` when the test plays the host).
    pub deliveries: Option<Deliveries>,
    /// Each post's author, to edit posts as their author.
    authors: std::sync::Mutex<std::collections::HashMap<String, String>>,
    stop: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<()>>,
    _temp: Option<tempfile::TempDir>,
}

/// Waits until no blog holds the data directory `dir`: its background tasks (the change feed's
/// lag report, the sweeps) hold the store only while they work, and one may be at work as the
/// blog stops (the lag is first measured 5 s after the start, which a test under load reaches).
/// The lock is the store's own (`lock` in the data directory, src/cosmos/embedded/database.rs).
async fn wait_until_released(dir: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("lock"))
            .unwrap();
        if lock.try_lock().is_ok() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} is still held 30 s after the blog stopped",
            dir.display()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// A second instance of a [`TestApp`] ([`TestApp::another_instance`]).
pub(crate) struct OtherInstance {
    pub base: String,
    client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<std::io::Result<()>>>,
}

impl OtherInstance {
    /// `GET path` anonymously: the database operations it made, and the body.
    pub(crate) async fn get(&self, path: &str) -> (u64, String) {
        let answer = self.client.get(format!("{}{path}", self.base)).send().await.unwrap();
        let operations = answer.headers()["x-cosmos-operations"].to_str().unwrap().parse().unwrap();
        (operations, answer.text().await.unwrap())
    }

    /// `GET path` signed in as `user` (`x-dev-user`): the database operations it made.
    pub(crate) async fn get_as(&self, user: &str, path: &str) -> u64 {
        let answer = self
            .client
            .get(format!("{}{path}", self.base))
            .header("x-dev-user", user)
            .send()
            .await
            .unwrap();
        answer.headers()["x-cosmos-operations"].to_str().unwrap().parse().unwrap()
    }

    /// Stops serving and waits until the server has let go of the store.
    pub(crate) async fn stop(mut self) {
        self.stop.take().unwrap().send(()).unwrap();
        self.server.take().unwrap().await.unwrap().unwrap();
    }
}

/// A response, read whole.
pub(crate) struct Answer {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Answer {
    /// The body as text: a page's HTML, or the JSON as it reads.
    pub(crate) fn text(&self) -> String {
        match &self.body {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        }
    }
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }
    pub(crate) fn operations(&self) -> u64 {
        self.header("x-cosmos-operations")
            .expect("x-cosmos-operations is on every response")
            .parse()
            .unwrap()
    }
    /// `x-cosmos-partitions`: the logical partitions touched per container, `""` for none.
    pub(crate) fn partitions(&self) -> &str {
        self.header("x-cosmos-partitions").unwrap_or("")
    }
    pub(crate) fn charge(&self) -> f64 {
        self.header("x-ms-request-charge")
            .expect("x-ms-request-charge is on every response")
            .parse()
            .unwrap()
    }
    /// Asserts a problem+json answer with `status` and a non-empty detail, and returns the detail.
    pub(crate) fn problem(&self, status: u16) -> String {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.body);
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json"),
            "body: {}",
            self.body
        );
        assert_eq!(self.body["status"], status);
        let detail = self.body["detail"].as_str().expect("a problem has a detail").to_owned();
        assert!(!detail.is_empty());
        detail
    }
}

impl TestApp {
    /// A handler on a fresh, empty data directory.
    pub(crate) async fn start() -> TestApp {
        let temp = tempfile::tempdir().unwrap();
        let mut app = Self::start_in(temp.path()).await;
        app._temp = Some(temp);
        app
    }

    /// A handler on a fresh data directory, without local change-feed processors: the test
    /// plays the Functions host.
    pub(crate) async fn start_as_host() -> TestApp {
        let temp = tempfile::tempdir().unwrap();
        let mut app = Self::start_with(temp.path(), ChangeFeedMode::Host).await;
        app._temp = Some(temp);
        app
    }

    /// A handler on the data directory `dir` (which may hold earlier data).
    pub(crate) async fn start_in(dir: &Path) -> TestApp {
        Self::start_with(dir, ChangeFeedMode::Local).await
    }

    /// A handler on `dir`, with the change-feed functions run as `change_feed` says.
    pub(crate) async fn start_with(dir: &Path, change_feed: ChangeFeedMode) -> TestApp {
        Self::start_configured(Config { change_feed, ..Self::config(dir) }).await
    }

    /// The configuration `cargo run` would use, on the data directory `dir` and any free port.
    pub(crate) fn config(dir: &Path) -> Config {
        Config {
            listen: "127.0.0.1:0".parse().unwrap(),
            backend: Backend::Embedded { data_dir: dir.to_owned() },
            database: "blog".into(),
            create_containers: true,
            change_feed: ChangeFeedMode::Local,
            scripts: blog::ScriptsMode::InProcess,
            max_in_flight: blog::DEFAULT_MAX_IN_FLIGHT,
            header_timeout: blog::DEFAULT_HEADER_TIMEOUT,
            request_timeout: blog::DEFAULT_REQUEST_TIMEOUT,
            publish_every: blog::DEFAULT_PUBLISH_EVERY,
            write_limit: None,
            // The local development scheme: the caller is the `x-dev-user` header.
            auth: blog::AuthMode::Development,
            token_key: None,
            pictures: blog::PictureStorage::DataDirectory(dir.to_owned()),
            pictures_per_writer: None,
            picture_mb_per_writer: None,
            picture_memory_mb: None,
            upload_buffer_mb: None,
            // The address it listens on, as `cargo run` without `BLOG_PUBLIC_URL`.
            public_url: None,
        }
    }

    /// A handler with `config` (its data directory is the caller's to keep).
    pub(crate) async fn start_configured(config: Config) -> TestApp {
        let Backend::Embedded { data_dir } = &config.backend else {
            panic!("tests run on the embedded store")
        };
        let dir = data_dir.clone();
        let blog = Blog::open(&config).await.expect("the embedded store opens");
        let state = blog.state.clone();
        let deliveries = blog.deliveries();
        let listener = tokio::net::TcpListener::bind(config.listen).await.unwrap();
        let address = listener.local_addr().unwrap();
        let base = format!("http://{address}");
        let public = config
            .public_url
            .as_ref()
            .map_or_else(|| format!("http://localhost:{}", address.port()), ToString::to_string);
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            blog.serve(listener, async move {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        TestApp {
            base,
            public,
            client: reqwest::Client::new(),
            data_dir: dir,
            state,
            deliveries,
            authors: Default::default(),
            stop: Some(stop),
            server: Some(server),
            _temp: None,
        }
    }

    /// Keeps `dir` (the data directory of a blog started with [`TestApp::start_configured`])
    /// until the blog is dropped.
    pub(crate) fn keep(&mut self, dir: tempfile::TempDir) {
        self._temp = Some(dir);
    }

    /// Waits until `check` holds for the answer to `GET path`; returns that answer. The bound,
    /// 30 s, is not a speed target: it only ends a wait that would never end. It must hold on a
    /// 2-core machine running three test programs and a build beside it, where the change feed
    /// took more than 10 s to copy 101 posts.
    pub(crate) async fn eventually(&self, path: &str, check: impl Fn(&Value) -> bool) -> Answer {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let answer = self.get(path).await;
            if check(&answer.body) {
                return answer;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "GET {path} never satisfied the check; last answer: {}",
                answer.body
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// A second instance of this blog: the same store, scripts and keys, its own caches and no
    /// change-feed processors (this one's deliver the changes), served as `main` serves. What
    /// it shows of a write made through this one is what another instance of a function app
    /// shows.
    pub(crate) async fn another_instance(&self) -> OtherInstance {
        let mut config = TestApp::config(&self.data_dir);
        config.change_feed = ChangeFeedMode::Host;
        let other = Blog::start(&config, self.state.another_instance());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(other.serve(listener, async move {
            let _ = stopped.await;
        }));
        OtherInstance {
            base,
            client: reqwest::Client::new(),
            stop: Some(stop),
            server: Some(server),
        }
    }

    /// `GET path` signed in as `user` (`x-dev-user`): the database operations it made.
    pub(crate) async fn get_as(&self, user: &str, path: &str) -> u64 {
        let answer = self
            .client
            .get(format!("{}{path}", self.base))
            .header("x-dev-user", user)
            .send()
            .await
            .unwrap();
        answer.headers()["x-cosmos-operations"].to_str().unwrap().parse().unwrap()
    }

    /// Stops serving and waits until the server has let go of the store.
    pub(crate) async fn stop(mut self) -> Option<tempfile::TempDir> {
        self.stop.take().unwrap().send(()).unwrap();
        self.server.take().unwrap().await.unwrap();
        let (dir, temp) = (self.data_dir.clone(), self._temp.take());
        drop(self);
        wait_until_released(&dir).await;
        temp
    }

    /// Sends a request as the caller who owns what it writes (see [`TestApp::owner`]).
    pub(crate) async fn send(&self, method: Method, path: &str, body: Option<Value>) -> Answer {
        let caller = self.owner(&method, path, body.as_ref());
        self.send_as(caller.as_deref(), method, path, body).await
    }

    /// Sends a request as `caller` (`None`: anonymously).
    pub(crate) async fn send_as(
        &self,
        caller: Option<&str>,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Answer {
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some(caller) = caller {
            request = request.header("x-dev-user", caller);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer = read(request.send().await.unwrap()).await;
        if answer.status == StatusCode::CREATED && path == "/api/posts" {
            let (post, author) =
                (answer.body["id"].as_str().unwrap(), answer.body["userId"].as_str().unwrap());
            self.authors.lock().unwrap().insert(post.to_owned(), author.to_owned());
        }
        answer
    }

    /// A request with a raw body, sent as the caller who owns what it writes.
    pub(crate) async fn raw(
        &self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: &str,
    ) -> Answer {
        let caller = self.owner(&method, path, serde_json::from_str::<Value>(body).ok().as_ref());
        let mut request =
            self.client.request(method, format!("{}{path}", self.base)).body(body.to_owned());
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        if let Some(caller) = caller {
            request = request.header("x-dev-user", caller);
        }
        read(request.send().await.unwrap()).await
    }

    /// Who the tests act as for a write: a new principal to create a user, the user a body or
    /// path names, a post's author to edit or delete it, else "someone". Reads are anonymous.
    fn owner(&self, method: &Method, path: &str, body: Option<&Value>) -> Option<String> {
        if method == Method::GET {
            return None;
        }
        if path == "/api/users" {
            return Some(uuid::Uuid::new_v4().to_string());
        }
        if let Some(user) = body.and_then(|body| body.get("userId")).and_then(Value::as_str)
            && blog::testing::model::validate_id(user).is_ok()
        {
            return Some(user.to_owned());
        }
        let segments: Vec<&str> = path.trim_start_matches("/api/").split('/').collect();
        let owner = match segments.as_slice() {
            ["users", user] | ["posts", _, "likes", user] => Some((*user).to_owned()),
            ["posts", post] => self.authors.lock().unwrap().get(*post).cloned(),
            _ => None,
        };
        // Signed in in any case, so that what a test checks is not hidden behind a 401.
        Some(owner.unwrap_or_else(|| "someone".to_owned()))
    }

    pub(crate) async fn get(&self, path: &str) -> Answer {
        self.send(Method::GET, path, None).await
    }
    pub(crate) async fn post(&self, path: &str, body: Value) -> Answer {
        self.send(Method::POST, path, Some(body)).await
    }
    pub(crate) async fn put(&self, path: &str, body: Value) -> Answer {
        self.send(Method::PUT, path, Some(body)).await
    }

    /// Creates a user and returns its id.
    pub(crate) async fn user(&self, username: &str) -> String {
        let answer = self.post("/api/users", serde_json::json!({"username": username})).await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
        answer.body["id"].as_str().unwrap().to_owned()
    }

    /// Creates a post by `user_id` and returns its id.
    pub(crate) async fn post_by(&self, user_id: &str, title: &str) -> String {
        let answer = self
            .post(
                "/api/posts",
                serde_json::json!({"userId": user_id, "title": title, "content": "Some content."}),
            )
            .await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
        answer.body["id"].as_str().unwrap().to_owned()
    }
}

/// A `side`×`side` PNG of noise (xorshift from `seed`): a picture that does not compress, so its
/// size is about 3 bytes a pixel.
pub(crate) fn noise_png(side: u32, seed: u32) -> Vec<u8> {
    noise_png_of(side, side, seed)
}

/// A `width`×`height` PNG of noise, as [`noise_png`].
pub(crate) fn noise_png_of(width: u32, height: u32, seed: u32) -> Vec<u8> {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    let pixels = image::RgbImage::from_fn(width, height, |_, _| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        image::Rgb([state as u8, (state >> 8) as u8, (state >> 16) as u8])
    });
    let mut png = std::io::Cursor::new(Vec::new());
    pixels.write_to(&mut png, image::ImageFormat::Png).unwrap();
    png.into_inner()
}

/// Every file under `dir` (none where it does not exist), its subdirectories' included.
pub(crate) fn files_under(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() { found.extend(files_under(&path)) } else { found.push(path) }
    }
    found
}

pub(crate) async fn read(response: reqwest::Response) -> Answer {
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.unwrap();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()))
    };
    Answer { status, headers, body }
}
