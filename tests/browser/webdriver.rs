//! A small W3C WebDriver client over HTTP (reqwest), enough to drive headless Chromium through
//! Debian's chromedriver: sessions, navigation, elements, keys, page source and screenshots.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

/// Where Debian's `chromium` and `chromium-driver` packages put them.
const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// The key WebDriver names an element reference with.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// WebDriver's codes for the keys the keyboard test presses.
pub(crate) const TAB: &str = "\u{E004}";
pub(crate) const ENTER: &str = "\u{E007}";

/// A chromedriver process and one browser session in it; both end when dropped.
pub(crate) struct Browser {
    driver: Child,
    client: reqwest::Client,
    session: String,
    _profile: tempfile::TempDir,
}

/// An element of the current page.
#[derive(Clone)]
pub(crate) struct Element(String);

impl Browser {
    /// Starts chromedriver on a free port and a headless Chromium with a fresh profile. Fails,
    /// saying how to install them, when Debian's packages are not there.
    pub(crate) async fn start() -> Browser {
        for (path, package) in [(CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")] {
            assert!(
                Path::new(path).exists(),
                "{path} is missing: the browser tests need Debian's {package} package. \
                 Install it with tests/browser/install.sh (or run everything with tests/browser/run.sh)."
            );
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let client = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ready = client
                .get(format!("{base}/status"))
                .send()
                .await
                .ok()
                .map(|response| response.json::<Value>());
            if let Some(status) = ready
                && let Ok(status) = status.await
                && status["value"]["ready"] == true
            {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not become ready within 20 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let profile = tempfile::tempdir().unwrap();
        let args = [
            "--headless".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            // This machine's network is closed: nothing in the background may try to reach it.
            "--disable-quic".to_owned(),
            "--no-first-run".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--hide-scrollbars".to_owned(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
        }}});
        let answer: Value = client
            .post(format!("{base}/session"))
            .json(&capabilities)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let session = answer["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {answer}"))
            .to_owned();
        let mut browser = Browser {
            driver,
            client,
            session: format!("{base}/session/{session}"),
            _profile: profile,
        };
        browser.resize(1280, 900).await;
        browser
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self.client.request(method.clone(), format!("{}{path}", self.session));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer: Value = request.send().await.unwrap().json().await.unwrap();
        if let Some(error) = answer["value"]["error"].as_str() {
            panic!("WebDriver {method} {path}: {error}: {}", answer["value"]["message"]);
        }
        answer["value"].clone()
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    async fn get(&self, path: &str) -> Value {
        self.call(reqwest::Method::GET, path, None).await
    }

    pub(crate) async fn resize(&mut self, width: u32, height: u32) {
        self.post("/window/rect", json!({"width": width, "height": height})).await;
    }

    /// Emulates the reader's colour scheme (`prefers-color-scheme`) through ChromeDriver's
    /// Chrome DevTools Protocol endpoint (`goog/cdp/execute`, `Emulation.setEmulatedMedia`).
    pub(crate) async fn prefer_color_scheme(&self, scheme: &str) {
        let params = json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]});
        self.post(
            "/goog/cdp/execute",
            json!({"cmd": "Emulation.setEmulatedMedia", "params": params}),
        )
        .await;
    }

    /// Runs `script` in the page as an asynchronous function: its last argument is the callback
    /// whose argument is the answer (WebDriver's Execute Async Script). Scripts run this way are
    /// not subject to the page's Content-Security-Policy.
    pub(crate) async fn execute_async(&self, script: &str) -> Value {
        self.post("/execute/async", json!({"script": script, "args": []})).await
    }

    pub(crate) async fn open(&self, url: &str) {
        self.post("/url", json!({"url": url})).await;
    }

    pub(crate) async fn url(&self) -> String {
        self.get("/url").await.as_str().unwrap().to_owned()
    }

    pub(crate) async fn title(&self) -> String {
        self.get("/title").await.as_str().unwrap().to_owned()
    }

    pub(crate) async fn source(&self) -> String {
        self.get("/source").await.as_str().unwrap().to_owned()
    }

    pub(crate) async fn find(&self, css: &str) -> Element {
        let found = self.post("/element", json!({"using": "css selector", "value": css})).await;
        Element(found[ELEMENT].as_str().unwrap_or_else(|| panic!("no element {css}")).to_owned())
    }

    pub(crate) async fn exists(&self, css: &str) -> bool {
        let found = self.post("/elements", json!({"using": "css selector", "value": css})).await;
        !found.as_array().unwrap().is_empty()
    }

    pub(crate) async fn text(&self, css: &str) -> String {
        let element = self.find(css).await;
        self.get(&format!("/element/{}/text", element.0)).await.as_str().unwrap().to_owned()
    }

    pub(crate) async fn attribute(&self, element: &Element, name: &str) -> Option<String> {
        self.get(&format!("/element/{}/attribute/{name}", element.0))
            .await
            .as_str()
            .map(str::to_owned)
    }

    pub(crate) async fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css).await;
        self.post(&format!("/element/{}/clear", element.0), json!({})).await;
        self.post(&format!("/element/{}/value", element.0), json!({"text": text})).await;
    }

    /// Chooses the file at `path` in the file input `css`, as a person does in the file picker
    /// (WebDriver's Element Send Keys on a file input: the path is the input's file list).
    pub(crate) async fn choose_file(&self, css: &str, path: &std::path::Path) {
        let element = self.find(css).await;
        self.post(
            &format!("/element/{}/value", element.0),
            json!({"text": path.display().to_string()}),
        )
        .await;
    }

    /// Clicks what does not leave the page (a `<summary>`).
    pub(crate) async fn click(&self, css: &str) {
        let element = self.find(css).await;
        self.post(&format!("/element/{}/click", element.0), json!({})).await;
    }

    /// Clicks a link or a submit button and waits (at most 10 s) until the next page has replaced
    /// this one: the clicked element is gone from the document.
    pub(crate) async fn follow(&self, css: &str) {
        let element = self.find(css).await;
        self.post(&format!("/element/{}/click", element.0), json!({})).await;
        self.until_gone(&element).await;
    }

    /// Waits (at most 10 s) until `element` no longer belongs to the current document.
    pub(crate) async fn until_gone(&self, element: &Element) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let answer: Value = self
                .client
                .get(format!("{}/element/{}/name", self.session, element.0))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if answer["value"]["error"]
                .as_str()
                .is_some_and(|error| error.contains("stale") || error.contains("no such element"))
            {
                return;
            }
            assert!(Instant::now() < deadline, "the page did not change within 10 s");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The element that has the keyboard focus.
    pub(crate) async fn focused(&self) -> Element {
        let found = self.get("/element/active").await;
        Element(found[ELEMENT].as_str().unwrap().to_owned())
    }

    /// Presses and releases each key of `keys` (text, or [`TAB`], [`ENTER`]), as a keyboard does.
    pub(crate) async fn press(&self, keys: &str) {
        let actions: Vec<Value> = keys
            .chars()
            .flat_map(|key| {
                [
                    json!({"type": "keyDown", "value": key.to_string()}),
                    json!({"type": "keyUp", "value": key.to_string()}),
                ]
            })
            .collect();
        self.post(
            "/actions",
            json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]}),
        )
        .await;
    }

    /// Reloads `url` until its page source satisfies `check`, for at most 10 s (what the change
    /// feed copies appears a moment after the write); returns that source.
    pub(crate) async fn eventually(&self, url: &str, check: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            self.open(url).await;
            let source = self.source().await;
            if check(&source) {
                return source;
            }
            assert!(Instant::now() < deadline, "{url} never showed what was expected:\n{source}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The visible part of the page as PNG.
    pub(crate) async fn screenshot(&self) -> Vec<u8> {
        let encoded = self.get("/screenshot").await;
        base64::engine::general_purpose::STANDARD.decode(encoded.as_str().unwrap()).unwrap()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Ends the session (and its Chromium), then the driver; never blocks a runtime thread.
        let session = self.session.clone();
        let _ = std::thread::spawn(move || {
            let runtime =
                tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                reqwest::Client::new().delete(session).timeout(Duration::from_secs(5)).send().await
            })
        })
        .join();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
