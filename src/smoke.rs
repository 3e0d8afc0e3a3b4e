//! `handler smoke <base-url>`: proves that a running blog works, end to end, from outside, the
//! way its users reach it: the requests of the article (C1–C7, Q1–Q6) over HTTP, their answers
//! checked, and the change feed's copies awaited in Q3 and Q6. It prints one line per request
//! (status, latency, request units, Cosmos DB operations) and stops at the first thing wrong,
//! naming the step. `azd up` runs it after each deployment; `cargo run -- smoke` runs it against
//! a local blog.
//!
//! Without a credential it only reads (anonymous reads are public). With `--token` (an Entra ID
//! access token, as App Service Authentication takes it) or `--dev-user` (the development
//! sign-in of `BLOG_AUTH=development`), it also writes: it makes sure the caller has a user,
//! writes a post, a comment and a like, waits for the post's copies, reads everything back, then
//! takes the like back and deletes what it wrote, and waits for the copies to go.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long the copies may take to appear (or go) when `--wait` does not say: the change feed's
/// delay under the Functions host is seconds (its poll interval, 5 s by default), more on a cold
/// start of the trigger.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(120);
/// How often the copies are looked for.
const POLL_EVERY: Duration = Duration::from_millis(250);
/// One request's limit: past it the blog counts as not answering.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The environment variable a token may come from instead of `--token` (a command line is
/// visible to every user of the machine in `ps`).
pub const TOKEN_VARIABLE: &str = "BLOG_SMOKE_TOKEN";

pub const USAGE: &str = "usage: handler smoke <base-url> [--token <access-token> | --dev-user <id>] [--wait <seconds>]
  <base-url>     the blog, e.g. https://func-blog-xxxx.azurewebsites.net or http://localhost:7071
  --token        an Entra ID access token for the blog's API (or set BLOG_SMOKE_TOKEN): reads and writes
  --dev-user     the development sign-in (BLOG_AUTH=development): reads and writes as this id
  --wait         how long the change feed's copies may take, in seconds (default 120)
Without --token or --dev-user, only the anonymous reads are checked.";

/// Who the smoke test writes as.
#[derive(Clone, Debug, PartialEq)]
pub enum Credential {
    /// Reads only.
    Anonymous,
    /// `Authorization: Bearer <token>`, validated by App Service Authentication.
    Token(String),
    /// `x-dev-user: <id>`, the development sign-in.
    DevUser(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// The blog's base URL, without a trailing slash.
    pub base: String,
    pub credential: Credential,
    pub wait: Duration,
}

impl Options {
    /// Reads the arguments after `smoke`; `token_variable` is the value of [`TOKEN_VARIABLE`].
    pub fn parse(args: &[String], token_variable: Option<String>) -> Result<Options, String> {
        let mut base = None;
        let mut token = None;
        let mut dev_user = None;
        let mut wait = DEFAULT_WAIT;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let mut value = |flag: &str| args.next().cloned().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"));
            match arg.as_str() {
                "--token" => token = Some(value("--token")?),
                "--dev-user" => dev_user = Some(value("--dev-user")?),
                "--wait" => {
                    let text = value("--wait")?;
                    let seconds: u64 = text.parse().map_err(|_| format!("--wait takes whole seconds, not {text:?}\n{USAGE}"))?;
                    wait = Duration::from_secs(seconds);
                }
                "-h" | "--help" => return Err(USAGE.to_owned()),
                flag if flag.starts_with('-') => return Err(format!("unknown option {flag:?}\n{USAGE}")),
                url if base.is_none() => base = Some(url.to_owned()),
                extra => return Err(format!("one base URL only; {extra:?} is a second\n{USAGE}")),
            }
        }
        let base = base.ok_or_else(|| format!("the blog's base URL is missing\n{USAGE}"))?;
        let parsed = reqwest::Url::parse(&base).map_err(|error| format!("{base:?} is not a URL ({error})\n{USAGE}"))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
            return Err(format!("{base:?} is not an http or https URL with a host\n{USAGE}"));
        }
        if parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(format!("{base:?}: give the blog's base URL, without a query or fragment\n{USAGE}"));
        }
        let token = token.or(token_variable.filter(|token| !token.trim().is_empty()));
        let credential = match (token, dev_user) {
            (Some(_), Some(_)) => return Err(format!("give --token or --dev-user, not both\n{USAGE}")),
            (Some(token), None) => Credential::Token(token.trim().to_owned()),
            (None, Some(user)) => Credential::DevUser(user),
            (None, None) => Credential::Anonymous,
        };
        Ok(Options { base: base.trim_end_matches('/').to_owned(), credential, wait })
    }
}

/// The step that went wrong, and how.
#[derive(Debug)]
pub struct Failure {
    pub step: String,
    pub detail: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "smoke test failed at {}: {}", self.step, self.detail)
    }
}

fn fail(step: &str, detail: impl Into<String>) -> Failure {
    Failure { step: step.to_owned(), detail: detail.into() }
}

/// One answer, read whole.
struct Answer {
    status: u16,
    body: Value,
    charge: String,
    operations: String,
    latency: Duration,
}

impl Answer {
    /// The problem's `detail`, or the body, to say why a request was refused.
    fn why(&self) -> String {
        match self.body.get("detail").and_then(Value::as_str) {
            Some(detail) => detail.to_owned(),
            None => self.body.to_string().chars().take(300).collect(),
        }
    }
}

/// A smoke test run: the client, and where its lines go.
struct Run<'a> {
    client: reqwest::Client,
    options: &'a Options,
    out: &'a mut dyn std::io::Write,
}

impl Run<'_> {
    /// Sends one request and prints its line.
    async fn send(&mut self, step: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> Result<Answer, Failure> {
        let answer = self.call(step, &method, path, body).await?;
        self.print(step, &method, path, &answer, "");
        Ok(answer)
    }

    /// Sends one request, printing nothing.
    async fn call(&self, step: &str, method: &reqwest::Method, path: &str, body: Option<Value>) -> Result<Answer, Failure> {
        let mut request = self.client.request(method.clone(), format!("{}{path}", self.options.base));
        request = match &self.options.credential {
            Credential::Anonymous => request,
            Credential::Token(token) => request.bearer_auth(token),
            Credential::DevUser(user) => request.header("x-dev-user", user),
        };
        if let Some(body) = body {
            request = request.header("content-type", "application/json").body(body.to_string());
        }
        let started = Instant::now();
        let response = request.send().await.map_err(|error| fail(step, format!("{method} {path} got no answer: {error}")))?;
        let status = response.status().as_u16();
        let header = |name: &str| response.headers().get(name).and_then(|value| value.to_str().ok()).unwrap_or("-").to_owned();
        let (charge, operations) = (header("x-ms-request-charge"), header("x-cosmos-operations"));
        let is_json = header("content-type").contains("json");
        let text =
            response.text().await.map_err(|error| fail(step, format!("{method} {path}: the answer broke off: {error}")))?;
        let latency = started.elapsed();
        let body = if is_json { serde_json::from_str(&text).unwrap_or(Value::Null) } else { Value::String(text) };
        Ok(Answer { status, body, charge, operations, latency })
    }

    /// One line: the step, the request, its status, latency, request units and operations.
    fn print(&mut self, step: &str, method: &reqwest::Method, path: &str, answer: &Answer, note: &str) {
        let _ = writeln!(
            self.out,
            "{step:<4} {method:<6} {path:<60} {} {:>8.1} ms {:>7} RU {:>3} ops{note}",
            answer.status,
            answer.latency.as_secs_f64() * 1000.0,
            answer.charge,
            answer.operations
        );
    }

    /// Sends a request that must answer `expected`.
    async fn expect(
        &mut self,
        step: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        expected: u16,
    ) -> Result<Answer, Failure> {
        let answer = self.send(step, method.clone(), path, body).await?;
        if answer.status != expected {
            return Err(fail(
                step,
                format!("{method} {path} answered {} (expected {expected}): {}", answer.status, answer.why()),
            ));
        }
        if answer.charge == "-" || answer.operations == "-" {
            return Err(fail(
                step,
                format!("{method} {path} carries no x-ms-request-charge / x-cosmos-operations: is this the blog?"),
            ));
        }
        Ok(answer)
    }

    /// Polls `GET path` until `holds` is true of the answer; returns how long it took from
    /// `since`. Only the last poll is printed: the one that saw it, or the one that gave up.
    async fn until(
        &mut self,
        step: &str,
        what: &str,
        path: &str,
        since: Instant,
        holds: impl Fn(&Value) -> bool,
    ) -> Result<Duration, Failure> {
        let get = reqwest::Method::GET;
        let deadline = Instant::now() + self.options.wait;
        let mut polls = 0;
        loop {
            polls += 1;
            let answer = self.call(step, &get, path, None).await?;
            if answer.status != 200 {
                self.print(step, &get, path, &answer, "");
                return Err(fail(step, format!("GET {path} answered {}: {}", answer.status, answer.why())));
            }
            if holds(&answer.body) {
                let took = since.elapsed();
                self.print(step, &get, path, &answer, &format!("  {what} after {:.1} s ({polls} polls)", took.as_secs_f64()));
                return Ok(took);
            }
            if Instant::now() >= deadline {
                self.print(step, &get, path, &answer, &format!("  still not {what} after {} s", self.options.wait.as_secs()));
                return Err(fail(
                    step,
                    format!(
                        "not {what} within {} s ({polls} polls of GET {path}): the change feed did not deliver \
                         (is the change-feed function running? `handler dead-letters` lists what it set aside)",
                        self.options.wait.as_secs()
                    ),
                ));
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }
}

/// Whether a list answer (`{items: [...]}`) holds an item with this id.
fn lists(body: &Value, id: &str) -> bool {
    body["items"].as_array().is_some_and(|items| items.iter().any(|item| item["id"] == id))
}

/// What a run measured.
#[derive(Debug, Default)]
pub struct Summary {
    /// How long the post took to appear in Q3 and in Q6 (writes only).
    pub copies_appeared: Option<(Duration, Duration)>,
    /// How long its deletion took to reach Q3 and Q6.
    pub copies_removed: Option<(Duration, Duration)>,
}

/// Runs the smoke test against `options.base`, printing one line per request to `out`.
pub async fn run(options: &Options, out: &mut dyn std::io::Write) -> Result<Summary, Failure> {
    let client = reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|error| fail("setup", format!("no HTTP client: {error}")))?;
    let mut run = Run { client, options, out };
    let get = reqwest::Method::GET;

    // Anonymous reads, as anyone sees the blog.
    let feed = run.expect("Q6", get.clone(), "/api/feed?limit=100", None, 200).await?;
    let front = run.expect("page", get.clone(), "/", None, 200).await?;
    if !front.body.as_str().is_some_and(|html| html.contains("<html")) {
        return Err(fail("page", "GET / is not the blog's front page (no HTML)"));
    }
    let Credential::Anonymous = options.credential else {
        return write_and_read(&mut run).await;
    };
    if let Some(post) = feed.body["items"].get(0) {
        let post_id = post["id"].as_str().unwrap_or_default().to_owned();
        let author = post["userId"].as_str().unwrap_or_default().to_owned();
        run.expect("Q2", get.clone(), &format!("/api/posts/{post_id}"), None, 200).await?;
        run.expect("Q4", get.clone(), &format!("/api/posts/{post_id}/comments"), None, 200).await?;
        run.expect("Q5", get.clone(), &format!("/api/posts/{post_id}/likes"), None, 200).await?;
        run.expect("Q1", get.clone(), &format!("/api/users/{author}"), None, 200).await?;
        run.expect("Q3", get.clone(), &format!("/api/users/{author}/posts"), None, 200).await?;
    }
    let _ = writeln!(run.out, "reads only: pass --token (or BLOG_SMOKE_TOKEN) or --dev-user to check the writes too");
    Ok(Summary::default())
}

/// The writes, each read back, and the copies awaited; then everything written is taken back.
async fn write_and_read(run: &mut Run<'_>) -> Result<Summary, Failure> {
    use reqwest::Method;
    let me = run.expect("who", Method::GET, "/api/me", None, 200).await?;
    let Some(user_id) = me.body["userId"].as_str().map(str::to_owned) else {
        return Err(fail("who", format!("GET /api/me answered no userId: {}", me.body)));
    };
    let user = ensure_user(run, &user_id).await?;
    let username = user["username"].as_str().unwrap_or_default().to_owned();

    let title = format!("Smoke test {}", uuid::Uuid::new_v4().simple());
    let body = json!({"userId": user_id, "title": title, "content": "Written by `handler smoke`, and deleted by it."});
    let written = Instant::now();
    let post = run.expect("C2", Method::POST, "/api/posts", Some(body), 201).await?;
    let Some(post_id) = post.body["id"].as_str().map(str::to_owned) else {
        return Err(fail("C2", format!("the created post has no id: {}", post.body)));
    };
    let comment_body = json!({"userId": user_id, "content": "A smoke test's comment."});
    let comment = run.expect("C3", Method::POST, &format!("/api/posts/{post_id}/comments"), Some(comment_body), 201).await?;
    let comment_id = comment.body["id"].as_str().unwrap_or_default().to_owned();
    run.expect("C4", Method::POST, &format!("/api/posts/{post_id}/likes"), Some(json!({"userId": user_id})), 201).await?;

    let read = run.expect("Q2", Method::GET, &format!("/api/posts/{post_id}"), None, 200).await?;
    let counts = (read.body["commentCount"].as_u64(), read.body["likeCount"].as_u64());
    if counts != (Some(1), Some(1)) || read.body["userUsername"] != username.as_str() {
        return Err(fail("Q2", format!("expected 1 comment, 1 like, by {username:?}; the post reads {}", read.body)));
    }
    let comments = run.expect("Q4", Method::GET, &format!("/api/posts/{post_id}/comments"), None, 200).await?;
    if !lists(&comments.body, &comment_id) {
        return Err(fail("Q4", format!("the comment {comment_id} is not listed: {}", comments.body)));
    }
    let likes = run.expect("Q5", Method::GET, &format!("/api/posts/{post_id}/likes"), None, 200).await?;
    if !likes.body["items"].as_array().is_some_and(|items| items.iter().any(|like| like["userId"] == user_id.as_str())) {
        return Err(fail("Q5", format!("the like by {user_id} is not listed: {}", likes.body)));
    }
    run.expect("Q1", Method::GET, &format!("/api/users/{user_id}"), None, 200).await?;
    let q3 = format!("/api/users/{user_id}/posts?limit=100");
    let in_users = run.until("Q3", "copied into users", &q3, written, |body| lists(body, &post_id)).await?;
    let in_feed = run.until("Q6", "copied into feed", "/api/feed?limit=100", written, |body| lists(body, &post_id)).await?;
    run.expect("page", Method::GET, &format!("/posts/{post_id}"), None, 200).await?;

    run.expect("C5", Method::DELETE, &format!("/api/posts/{post_id}/likes/{user_id}"), None, 204).await?;
    run.expect("C6", Method::DELETE, &format!("/api/posts/{post_id}/comments/{comment_id}"), None, 204).await?;
    let deleted = Instant::now();
    run.expect("C7", Method::DELETE, &format!("/api/posts/{post_id}"), None, 204).await?;
    run.expect("Q2", Method::GET, &format!("/api/posts/{post_id}"), None, 404).await?;
    let gone_users = run.until("Q3", "gone from users", &q3, deleted, |body| !lists(body, &post_id)).await?;
    let gone_feed = run.until("Q6", "gone from feed", "/api/feed?limit=100", deleted, |body| !lists(body, &post_id)).await?;
    let _ = writeln!(
        run.out,
        "ok: copies appeared in users after {:.1} s and in feed after {:.1} s; went after {:.1} s and {:.1} s",
        in_users.as_secs_f64(),
        in_feed.as_secs_f64(),
        gone_users.as_secs_f64(),
        gone_feed.as_secs_f64()
    );
    Ok(Summary { copies_appeared: Some((in_users, in_feed)), copies_removed: Some((gone_users, gone_feed)) })
}

/// The caller's user: read (Q1), or created (C1) with a name of its own the first time. A user is
/// never deleted (the API has no such request), so it stays for the next run.
async fn ensure_user(run: &mut Run<'_>, user_id: &str) -> Result<Value, Failure> {
    use reqwest::Method;
    let read = run.send("Q1", Method::GET, &format!("/api/users/{user_id}"), None).await?;
    match read.status {
        200 => return Ok(read.body),
        404 => {}
        other => return Err(fail("Q1", format!("GET /api/users/{user_id} answered {other}: {}", read.why()))),
    }
    // A name is taken by someone else now and then: another is drawn.
    for _ in 0..3 {
        let name = format!("smoke-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
        let created = run.send("C1", Method::POST, "/api/users", Some(json!({"username": name}))).await?;
        match created.status {
            201 => return Ok(created.body),
            409 if created.why().contains("is taken") => continue,
            other => return Err(fail("C1", format!("POST /api/users answered {other}: {}", created.why()))),
        }
    }
    Err(fail("C1", "three usernames in a row were taken"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str], variable: Option<&str>) -> Result<Options, String> {
        let args: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
        Options::parse(&args, variable.map(str::to_owned))
    }

    #[test]
    fn arguments_are_read_and_bad_ones_named() {
        let options = parse(&["http://localhost:7071/", "--dev-user", "alice", "--wait", "5"], None).unwrap();
        assert_eq!(options.base, "http://localhost:7071");
        assert_eq!(options.credential, Credential::DevUser("alice".into()));
        assert_eq!(options.wait, Duration::from_secs(5));
        assert_eq!(parse(&["https://x.azurewebsites.net"], Some("t0ken")).unwrap().credential, Credential::Token("t0ken".into()));
        assert_eq!(parse(&["https://x.azurewebsites.net"], None).unwrap().credential, Credential::Anonymous);

        assert!(parse(&[], None).unwrap_err().contains("base URL is missing"));
        assert!(parse(&["localhost:7071"], None).unwrap_err().contains("not an http or https URL"));
        assert!(parse(&["not a url"], None).unwrap_err().contains("is not a URL"));
        assert!(parse(&["http://x", "--token", "a", "--dev-user", "b"], None).unwrap_err().contains("not both"));
        assert!(parse(&["http://x", "--dev-user", "b"], Some("a")).unwrap_err().contains("not both"));
        assert!(parse(&["http://x", "--frobnicate"], None).unwrap_err().contains("unknown option \"--frobnicate\""));
        assert!(parse(&["http://x", "--wait", "soon"], None).unwrap_err().contains("--wait takes whole seconds"));
        assert!(parse(&["http://x", "--token"], None).unwrap_err().contains("--token needs a value"));
        assert!(parse(&["http://x", "http://y"], None).unwrap_err().contains("one base URL only"));
        assert!(parse(&["http://x/?a=1"], None).unwrap_err().contains("without a query"));
    }
}
