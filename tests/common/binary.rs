//! The real `handler` binary, started as `cargo run` starts it (`main`'s path: its config from
//! the environment, `Blog::serve`'s server loop), for tests about what only the process shows:
//! `kill -9`, file descriptor limits, timeouts on real sockets.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

/// `handler <args>` (none: serve) on the embedded store in `dir`, which must end by itself within
/// a minute (a refusal, a command); its output.
pub(crate) fn run_to_end(args: &[&str], dir: &Path) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_handler"))
        .args(args)
        .env("BLOG_DATA_DIR", dir)
        .env("BLOG_LISTEN", "127.0.0.1:0")
        .env("BLOG_AUTH", "development")
        .env("NO_COLOR", "1")
        .env_remove("CosmosDB")
        .env_remove("CosmosDB__accountEndpoint")
        .env_remove("FUNCTIONS_CUSTOMHANDLER_PORT")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("handler {args:?} did not end: it started on {}", dir.display());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// The command a refusal advises: the one in backquotes that starts `BLOG_DATA_DIR=`, ending at
/// the first backquote outside the shell's quotes (an id may hold backquotes, single-quoted).
pub(crate) fn advised_command(refusal: &str) -> &str {
    let start =
        refusal.find("`BLOG_DATA_DIR=").unwrap_or_else(|| panic!("no command advised: {refusal}"))
            + 1;
    let (mut quoted, mut escaped) = (false, false);
    let end = refusal[start..].char_indices().find_map(|(at, c)| {
        match c {
            _ if escaped => escaped = false,
            '\\' if !quoted => escaped = true,
            '\'' => quoted = !quoted,
            '`' if !quoted => return Some(at),
            _ => {}
        }
        None
    });
    &refusal[start..start + end.unwrap_or_else(|| panic!("the command's end: {refusal}"))]
}

/// `command` run as an operator pasting it would: by `sh -c`, with the directory of the `handler`
/// binary first on the PATH, in `cwd`; its output, once it succeeded.
pub(crate) fn run_as_printed(command: &str, cwd: &Path) -> std::process::Output {
    let binaries = Path::new(env!("CARGO_BIN_EXE_handler")).parent().unwrap();
    let output = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env(
            "PATH",
            format!("{}:{}", binaries.display(), std::env::var("PATH").unwrap_or_default()),
        )
        .env("NO_COLOR", "1")
        .env_remove("CosmosDB")
        .env_remove("CosmosDB__accountEndpoint")
        .output()
        .unwrap();
    assert!(output.status.success(), "{command}: {}", String::from_utf8_lossy(&output.stderr));
    output
}

/// A running handler process; killed when dropped.
pub(crate) struct Handler {
    child: Child,
    /// `http://127.0.0.1:<port>`, without a trailing slash.
    pub base: String,
    /// The lines it has written to stdout so far: its log.
    pub log: Arc<Mutex<Vec<String>>>,
    /// The lines it has written to stderr so far (also shown on the test's stderr): while
    /// serving, its warnings and errors, which the Functions host logs as such.
    pub errors: Arc<Mutex<Vec<String>>>,
    /// The thread that reads its stdout until the process closes it.
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Handler {
    /// `handler` on the embedded store in `data_dir`, with the development sign-in, on a free
    /// port, with `extra` settings on top.
    pub(crate) fn start(data_dir: &Path, extra: &[(&str, &str)]) -> Handler {
        let mut command = Command::new(env!("CARGO_BIN_EXE_handler"));
        command
            .env("BLOG_DATA_DIR", data_dir)
            .env("BLOG_LISTEN", "127.0.0.1:0")
            .env("BLOG_AUTH", "development")
            // The tests write as fast as they can: no per-user limit unless `extra` sets one.
            .env("BLOG_WRITES_PER_MINUTE", "off")
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1");
        for (name, value) in extra {
            command.env(name, value);
        }
        Self::spawn(command)
    }

    /// As [`Handler::start`], in a process that may open at most `descriptors` files (soft and
    /// hard limit, set by the shell's `ulimit` before it becomes the handler).
    pub(crate) fn start_with_descriptor_limit(data_dir: &Path, descriptors: u32) -> Handler {
        let mut command = Command::new("bash");
        command
            .arg("-c")
            .arg(format!("ulimit -n {descriptors} && exec \"$0\""))
            .arg(env!("CARGO_BIN_EXE_handler"))
            .env("BLOG_DATA_DIR", data_dir)
            .env("BLOG_LISTEN", "127.0.0.1:0")
            .env("BLOG_AUTH", "development")
            // The tests write as fast as they can: no per-user limit unless `extra` sets one.
            .env("BLOG_WRITES_PER_MINUTE", "off")
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1");
        Self::spawn(command)
    }

    fn spawn(mut command: Command) -> Handler {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the handler binary starts");
        let errors = Arc::new(Mutex::new(Vec::new()));
        let kept = errors.clone();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                eprintln!("{line}");
                kept.lock().unwrap().push(line);
            }
        });
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut lines = stdout.lines();
        for line in lines.by_ref() {
            let line = line.unwrap();
            if let Some(at) = line.find("serving on http://") {
                let address = line[at + "serving on ".len()..].split_whitespace().next().unwrap();
                let base = address.trim_end_matches('/').to_owned();
                // Keep draining its log, so that it never blocks on a full pipe.
                let log = Arc::new(Mutex::new(Vec::new()));
                let kept = log.clone();
                let reader = std::thread::spawn(move || {
                    lines.map_while(Result::ok).for_each(|line| kept.lock().unwrap().push(line))
                });
                return Handler { child, base, log, errors, reader: Some(reader) };
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("the handler exited before serving");
    }

    /// Creates the user `writer` (signed in with the development scheme) and a post of theirs,
    /// and answers the post's id: what a test of a writer's uploads starts from.
    pub(crate) async fn writers_post(&self, writer: &str) -> String {
        let client = reqwest::Client::new();
        let user = client
            .post(format!("{}/api/users", self.base))
            .header("x-dev-user", writer)
            .json(&serde_json::json!({"username": writer}))
            .send()
            .await
            .unwrap();
        assert_eq!(user.status(), reqwest::StatusCode::CREATED);
        let post = client
            .post(format!("{}/api/posts", self.base))
            .header("x-dev-user", writer)
            .json(&serde_json::json!({"userId": writer, "title": "Pictures", "content": "Some."}))
            .send()
            .await
            .unwrap();
        assert_eq!(post.status(), reqwest::StatusCode::CREATED);
        post.json::<serde_json::Value>().await.unwrap()["id"].as_str().unwrap().to_owned()
    }

    /// The process's resident memory now (`VmRSS`) and at its peak so far (`VmHWM`), in bytes,
    /// as Linux counts them (`/proc/<pid>/status`).
    pub(crate) fn memory(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let field = |name: &str| {
            let line = status.lines().find(|line| line.starts_with(name)).unwrap();
            line[name.len()..].trim().trim_end_matches("kB").trim().parse::<u64>().unwrap() * 1024
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    /// Whether the process is still running.
    pub(crate) fn is_alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// `host:port`, for raw sockets.
    pub(crate) fn address(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    /// SIGTERM, as the host sends when it recycles the worker, and the wait for the process to
    /// exit and its stdout to close; what it wrote is then all in [`Handler::log`].
    // std's `Child::kill` sends SIGKILL; SIGTERM, the host's signal, is libc's call.
    #[allow(unsafe_code)]
    pub(crate) fn stop(mut self) -> std::process::ExitStatus {
        // SAFETY: kill(2) on our own child's pid, with a valid signal.
        assert_eq!(unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) }, 0);
        let status = self.child.wait().unwrap();
        self.reader.take().unwrap().join().unwrap();
        status
    }

    /// SIGKILL: no shutdown code runs.
    pub(crate) fn kill_9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Handler {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
