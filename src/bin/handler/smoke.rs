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
//! writes a post, adds a picture to it and reads the picture back (on Azure: Blob Storage with
//! the app's identity; a blog with no picture store says so and is not failed), writes a
//! comment and a like, waits for the post's copies, reads everything back, then takes the like
//! back and deletes what it wrote, and waits for the copies and the picture to go.
//!
//! It runs right after `azd deploy`, when a new deployment answers for a while with what
//! settles by itself: 5xx and refused or broken connections while the Functions host starts and
//! mounts the app's package, 401/403 while a new app registration or role assignment reaches
//! everything. For `--settle` seconds from its start (default 300) it waits those out, each
//! request retried after a pause that doubles, one line per retry (`settling` says which
//! answers, `Run::settled` how). Any other answer is the blog's own and is checked at once.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long the copies may take to appear (or go) when `--wait` does not say: the change feed's
/// delay under the Functions host is seconds (its poll interval, 5 s by default), more on a cold
/// start of the trigger.
pub(crate) const DEFAULT_WAIT: Duration = Duration::from_secs(120);
/// How often the copies are looked for.
const POLL_EVERY: Duration = Duration::from_millis(250);
/// One request's limit: past it the blog counts as not answering.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a new deployment may take to settle when `--settle` does not say: the Functions
/// host's cold start on Flex Consumption (the package mounted, the host and the handler started)
/// takes a minute or two, and a new role assignment or app registration minutes to be accepted
/// everywhere.
pub(crate) const DEFAULT_SETTLE: Duration = Duration::from_secs(300);
/// The pause before a request's first retry; each next one is twice as long, up to
/// [`LONGEST_PAUSE`]: a blog that settles in a second is not kept waiting long, and one that
/// takes minutes is not asked several times a second.
const FIRST_PAUSE: Duration = Duration::from_secs(1);
const LONGEST_PAUSE: Duration = Duration::from_secs(15);

/// The environment variable a token may come from instead of `--token` (a command line is
/// visible to every user of the machine in `ps`).
pub(crate) const TOKEN_VARIABLE: &str = "BLOG_SMOKE_TOKEN";

/// Who the smoke test writes as.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Credential {
    /// Reads only.
    Anonymous,
    /// `Authorization: Bearer <token>`, validated by App Service Authentication.
    Token(String),
    /// `x-dev-user: <id>`, the development sign-in.
    DevUser(String),
}

/// What `handler smoke` checks, and how.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Options {
    /// The blog's base URL, without a trailing slash.
    pub(crate) base: String,
    /// How it signs in.
    pub(crate) credential: Credential,
    /// How long it waits for a fresh deployment to accept its first write.
    pub(crate) wait: Duration,
    /// How long, from the start, what settles by itself is waited out (`--settle`).
    pub(crate) settle: Duration,
}

/// `handler smoke`'s arguments, as its `--help` shows them (the command's own line is in
/// `main.rs`); [`Args::options`] makes them [`Options`].
#[derive(Clone, Debug, clap::Args)]
#[command(after_help = "\
Without --token or --dev-user, only the anonymous reads are checked. Until --settle has passed,
what a new deployment answers while it settles (5xx, 408, 429, no answer, and 401/403 before the
first write is accepted) is retried, backing off from 1 s to 15 s.")]
pub(crate) struct Args {
    /// The blog, e.g. https://func-blog-xxxx.azurewebsites.net or http://localhost:7071
    #[arg(value_name = "BASE_URL", value_parser = base_url)]
    pub(crate) base: String,
    /// An Entra ID access token for the blog's API (or set BLOG_SMOKE_TOKEN): reads and writes
    #[arg(long, value_name = "ACCESS_TOKEN", conflicts_with = "dev_user")]
    pub(crate) token: Option<String>,
    /// The development sign-in (BLOG_AUTH=development): reads and writes as this id
    #[arg(long, value_name = "ID")]
    pub(crate) dev_user: Option<String>,
    /// How long the change feed's copies may take to appear, in seconds
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_WAIT.as_secs(), allow_negative_numbers = true)]
    pub(crate) wait: u64,
    /// How long a new deployment may take to settle, in seconds from the start
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_SETTLE.as_secs(), allow_negative_numbers = true)]
    pub(crate) settle: u64,
}

impl Args {
    /// The options of a run; `token_variable` is the value of [`TOKEN_VARIABLE`], taken when
    /// `--token` is not given. The one error: a token from it together with `--dev-user` (clap
    /// refuses `--token` with `--dev-user` itself).
    pub(crate) fn options(self, token_variable: Option<String>) -> Result<Options, String> {
        let token = self.token.or(token_variable.filter(|token| !token.trim().is_empty()));
        let credential = match (token, self.dev_user) {
            (Some(_), Some(_)) => {
                return Err(format!("give --token or --dev-user, not both ({TOKEN_VARIABLE} is set, and is a token)"));
            }
            (Some(token), None) => Credential::Token(token.trim().to_owned()),
            (None, Some(user)) => Credential::DevUser(user),
            (None, None) => Credential::Anonymous,
        };
        Ok(Options {
            base: self.base,
            credential,
            wait: Duration::from_secs(self.wait),
            settle: Duration::from_secs(self.settle),
        })
    }
}

/// The blog's base URL as given, checked, without a trailing slash.
fn base_url(base: &str) -> Result<String, String> {
    let parsed = reqwest::Url::parse(base).map_err(|error| format!("not a URL ({error})"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
        return Err("not an http or https URL with a host".into());
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err("give the blog's base URL, without a query or fragment".into());
    }
    Ok(base.trim_end_matches('/').to_owned())
}

/// The step that went wrong, and how.
#[derive(Debug)]
pub(crate) struct Failure {
    /// The step that failed.
    pub(crate) step: String,
    /// What it saw.
    pub(crate) detail: String,
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
    /// What an earlier attempt of this request was answered when that answer does not say
    /// whether the attempt was done ("502 Bad Gateway", "no answer (…)"); its retry carried the
    /// same Idempotency-Key, so the blog made it once either way. `None` when no attempt was in
    /// doubt.
    unsure_attempt: Option<String>,
}

impl Answer {
    /// The problem's `detail`, or the body, to say why a request was refused.
    fn why(&self) -> String {
        match (&self.body, self.body.get("detail").and_then(Value::as_str)) {
            (_, Some(detail)) => detail.to_owned(),
            (Value::String(text), None) if text.trim().is_empty() => "(no body)".to_owned(),
            (Value::String(text), None) => text.chars().take(300).collect(),
            (body, None) => body.to_string().chars().take(300).collect(),
        }
    }
}

/// An attempt answered the way a deployment answers while it settles (see [`settling`]).
struct Unsettled {
    /// What it was answered, for the retry's line: "503 Service Unavailable", "no answer (…)".
    said: String,
    /// What that means, for the same line.
    meaning: &'static str,
    /// The request and its answer in full, for the failure when the bound has passed.
    last: String,
    /// Whether the attempt may have been done anyway (see [`may_have_been_done`]).
    maybe_done: bool,
}

/// What an answer with this status means when a deployment gives it while it settles; `None`
/// for the blog's own answer, which is final. `sign_in_settling`: whether 401/403 are still
/// taken as the sign-in settling (see [`Run::sign_in_settling`]). Every other 4xx (400, 404,
/// 409, 412, 422…) says the request itself is wrong, which no wait changes.
fn settling(status: u16, sign_in_settling: bool) -> Option<&'static str> {
    match status {
        503 => Some("the app is still starting"),
        502 | 504 => Some("the front end got no answer from the app (starting, or restarting)"),
        500..=599 => Some("the blog failed, as it does while its access to Cosmos DB is being granted"),
        408 => Some("the request timed out before the app took it"),
        429 => Some("too many requests for now"),
        401 | 403 if sign_in_settling => {
            Some("the sign-in is not accepted yet (a new app registration or role assignment takes minutes)")
        }
        _ => None,
    }
}

/// Whether an attempt answered `status` may have been done anyway. A 5xx says the server
/// failed, not that it did nothing: the Functions host answers 502/504 for a worker that died or
/// timed out in the middle of a request. 401/403, 408 and 429 are refusals before any work.
fn may_have_been_done(status: u16) -> bool {
    status >= 500
}

/// The pause after `pause`: twice as long, up to [`LONGEST_PAUSE`].
fn next_pause(pause: Duration) -> Duration {
    (pause * 2).min(LONGEST_PAUSE)
}

/// `pause` and up to a tenth more, as `random` says: the usual guard against retries falling
/// into step with something periodic (other clients' retries, instances starting), and cheap.
fn jittered(pause: Duration, random: u64) -> Duration {
    pause + pause.mul_f64((random % 1000) as f64 / 10_000.0)
}

/// A pause as the retry's line says it: whole seconds, or tenths below one.
fn shown(pause: Duration) -> String {
    if pause >= Duration::from_secs(1) {
        format!("{:.0} s", pause.as_secs_f64())
    } else {
        format!("{:.1} s", pause.as_secs_f64())
    }
}

/// "503 Service Unavailable", or the number alone for a status without a name.
fn status_text(status: u16) -> String {
    match reqwest::StatusCode::from_u16(status).ok().and_then(|code| code.canonical_reason()) {
        Some(reason) => format!("{status} {reason}"),
        None => status.to_string(),
    }
}

/// The innermost cause of an error: "Connection refused (os error 111)".
fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// A request that got no answer, or only part of one: a refused connection never reached the
/// blog; a reset or timed-out one may have been done.
fn no_answer(method: &reqwest::Method, path: &str, what: &str, error: &reqwest::Error) -> Unsettled {
    let meaning = match (error.is_connect(), error.is_timeout()) {
        (true, _) => "the app is not reachable yet",
        (false, true) => "the app did not answer in time",
        (false, false) => "the connection broke off",
    };
    Unsettled {
        said: format!("no answer ({})", root_cause(error)),
        meaning,
        last: format!("{method} {path} {what}: {}", blog::with_causes(error)),
        maybe_done: !error.is_connect(),
    }
}

/// A smoke test run: the client, and where its lines go.
struct Run<'a> {
    client: reqwest::Client,
    options: &'a Options,
    out: &'a mut dyn std::io::Write,
    /// Until when what settles by itself is waited out: `--settle` from the start.
    settle_until: Instant,
    /// Whether a write has been accepted (see [`Run::sign_in_settling`]).
    wrote: bool,
}

/// What a request sends.
enum Body {
    /// A JSON document.
    Json(Value),
    /// A picture's bytes (PNG).
    Picture(Vec<u8>),
}

impl Run<'_> {
    /// Whether a 401/403 is still taken as the sign-in settling: only with a credential, and only
    /// until the first write is accepted. Reads are public, so one that succeeds shows little,
    /// and even `/api/me` answering shows only that one instance took the token: Flex Consumption
    /// runs several behind one URL, each taking the authentication settings as it starts. A write
    /// accepted is the sign-in working end to end. After it, a 401/403 is the blog refusing its
    /// own author what it just let them do, the kind of bug this test is for; retrying it for
    /// minutes would only hide it behind a slow failure.
    fn sign_in_settling(&self) -> bool {
        self.options.credential != Credential::Anonymous && !self.wrote
    }

    /// Sends one request and prints its line; a write sent again after an attempt that may have
    /// been done, one more saying that its key made it once.
    async fn send(&mut self, step: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> Result<Answer, Failure> {
        self.send_body(step, method, path, body.map(Body::Json)).await
    }

    /// [`Run::send`], with a body of any kind.
    async fn send_body(
        &mut self,
        step: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<Body>,
    ) -> Result<Answer, Failure> {
        let answer = self.settled(step, &method, path, body.as_ref()).await?;
        self.print(step, &method, path, &answer, "");
        if let Some(earlier) = answer.unsure_attempt.as_deref().filter(|_| method != reqwest::Method::GET) {
            let _ = writeln!(
                self.out,
                "{step:<4} sent again with its Idempotency-Key after {earlier}: answered {}, made once",
                answer.status
            );
        }
        Ok(answer)
    }

    /// Sends one request until its answer is the blog's own. Until `settle_until`, an answer
    /// that settles by itself ([`settling`], or no answer) is retried after a pause that starts
    /// at [`FIRST_PAUSE`] for each request and doubles, with one line that says what was
    /// answered; past it, such an answer fails the step, saying so. Prints nothing else.
    async fn settled(
        &mut self,
        step: &str,
        method: &reqwest::Method,
        path: &str,
        body: Option<&Body>,
    ) -> Result<Answer, Failure> {
        let mut pause = FIRST_PAUSE;
        let mut unsure_attempt = None;
        // One key for the write and every retry of it: the blog makes it once, and answers a
        // retry after an attempt that was done as it answered that attempt.
        let key = (*method != reqwest::Method::GET).then(|| uuid::Uuid::new_v4().to_string());
        loop {
            let unsettled = match self.attempt(method, path, body, key.as_deref()).await {
                Ok(answer) => match self.unsettled(method, path, &answer) {
                    None => return Ok(self.accepted(method, Answer { unsure_attempt, ..answer })),
                    Some(unsettled) => unsettled,
                },
                Err(unsettled) => unsettled,
            };
            if unsettled.maybe_done && unsure_attempt.is_none() {
                unsure_attempt = Some(unsettled.said.clone());
            }
            let left = self.settle_until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(fail(step, self.gave_up(&unsettled.last, pause > FIRST_PAUSE)));
            }
            let wait = jittered(pause, uuid::Uuid::new_v4().as_u128() as u64).min(left);
            let _ = writeln!(
                self.out,
                "{step:<4} {}: {}, retrying in {} (up to {} s)",
                unsettled.said,
                unsettled.meaning,
                shown(wait),
                self.options.settle.as_secs()
            );
            tokio::time::sleep(wait).await;
            pause = next_pause(pause);
        }
    }

    /// Why a step fails whose last answer would have been waited out before `settle_until`.
    fn gave_up(&self, last: &str, retried: bool) -> String {
        let settle = self.options.settle.as_secs();
        if retried {
            format!("{last}; gave up after {settle} s: the blog did not settle (--settle)")
        } else {
            format!("{last}; not retried: the {settle} s the blog had to settle (--settle) are over")
        }
    }

    /// The answer as one that settles by itself, or `None` for the blog's own.
    fn unsettled(&self, method: &reqwest::Method, path: &str, answer: &Answer) -> Option<Unsettled> {
        let meaning = settling(answer.status, self.sign_in_settling())?;
        let said = status_text(answer.status);
        let last = format!("{method} {path} answered {said}: {}", answer.why());
        Some(Unsettled { said, meaning, last, maybe_done: may_have_been_done(answer.status) })
    }

    /// Notes a write's success (the sign-in has settled) and hands the answer on.
    fn accepted(&mut self, method: &reqwest::Method, answer: Answer) -> Answer {
        if *method != reqwest::Method::GET && (200..300).contains(&answer.status) {
            self.wrote = true;
        }
        answer
    }

    /// Sends one request once, printing nothing.
    async fn attempt(
        &self,
        method: &reqwest::Method,
        path: &str,
        body: Option<&Body>,
        key: Option<&str>,
    ) -> Result<Answer, Unsettled> {
        let mut request = self.client.request(method.clone(), format!("{}{path}", self.options.base));
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        request = match &self.options.credential {
            Credential::Anonymous => request,
            Credential::Token(token) => request.bearer_auth(token),
            Credential::DevUser(user) => request.header("x-dev-user", user),
        };
        request = match body {
            Some(Body::Json(body)) => request.header("content-type", "application/json").body(body.to_string()),
            Some(Body::Picture(bytes)) => request.header("content-type", "image/png").body(bytes.clone()),
            None => request,
        };
        let started = Instant::now();
        let response = request.send().await.map_err(|error| no_answer(method, path, "got no answer", &error))?;
        let status = response.status().as_u16();
        let header = |name: &str| response.headers().get(name).and_then(|value| value.to_str().ok()).unwrap_or("-").to_owned();
        let (charge, operations) = (header("x-ms-request-charge"), header("x-cosmos-operations"));
        let is_json = header("content-type").contains("json");
        let text = response.text().await.map_err(|error| no_answer(method, path, "the answer broke off", &error))?;
        let latency = started.elapsed();
        let body = if is_json { serde_json::from_str(&text).unwrap_or(Value::Null) } else { Value::String(text) };
        Ok(Answer { status, body, charge, operations, latency, unsure_attempt: None })
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
        checked(step, &method, path, answer, expected)
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
        let seen = |answer: &Answer| match answer.status {
            200 => Ok(holds(&answer.body)),
            other => Err(format!("GET {path} answered {other}: {}", answer.why())),
        };
        let gave_up = |polls: u32, wait: u64, _: &Answer| {
            format!(
                "not {what} within {wait} s ({polls} polls of GET {path}): the change feed did not deliver \
                 (is the change-feed function running? `handler dead-letters` lists what it set aside)"
            )
        };
        self.poll(step, what, path, since, seen, gave_up).await
    }

    /// Polls `GET path` until it answers `status`; returns how long it took from `since`.
    async fn until_status(
        &mut self,
        step: &str,
        what: &str,
        path: &str,
        since: Instant,
        status: u16,
    ) -> Result<Duration, Failure> {
        let gave_up = |_: u32, wait: u64, answer: &Answer| format!("GET {path} still answers {} after {wait} s", answer.status);
        self.poll(step, what, path, since, |answer| Ok(answer.status == status), gave_up).await
    }

    /// Polls `GET path` until `seen` says the answer shows `what` (an `Err` fails the step at
    /// once), for at most `--wait`; `gave_up` says why it failed past that, from the polls, the
    /// seconds waited and the last answer. Only the last poll is printed.
    async fn poll(
        &mut self,
        step: &str,
        what: &str,
        path: &str,
        since: Instant,
        seen: impl Fn(&Answer) -> Result<bool, String>,
        gave_up: impl Fn(u32, u64, &Answer) -> String,
    ) -> Result<Duration, Failure> {
        let get = reqwest::Method::GET;
        let deadline = Instant::now() + self.options.wait;
        let mut polls = 0;
        loop {
            polls += 1;
            let answer = self.settled(step, &get, path, None).await?;
            match seen(&answer) {
                Err(why) => {
                    self.print(step, &get, path, &answer, "");
                    return Err(fail(step, why));
                }
                Ok(true) => {
                    let took = since.elapsed();
                    self.print(step, &get, path, &answer, &format!("  {what} after {:.1} s ({polls} polls)", took.as_secs_f64()));
                    return Ok(took);
                }
                Ok(false) => {}
            }
            if Instant::now() >= deadline {
                let wait = self.options.wait.as_secs();
                self.print(step, &get, path, &answer, &format!("  still not {what} after {wait} s"));
                return Err(fail(step, gave_up(polls, wait, &answer)));
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }
}

/// The answer, if it is `expected` and the blog's (it carries the blog's measurements).
fn checked(step: &str, method: &reqwest::Method, path: &str, answer: Answer, expected: u16) -> Result<Answer, Failure> {
    if answer.status != expected {
        return Err(fail(step, format!("{method} {path} answered {} (expected {expected}): {}", answer.status, answer.why())));
    }
    if answer.charge == "-" || answer.operations == "-" {
        return Err(fail(
            step,
            format!("{method} {path} carries no x-ms-request-charge / x-cosmos-operations: is this the blog?"),
        ));
    }
    Ok(answer)
}

/// Whether a list answer (`{items: [...]}`) holds an item with this id.
fn lists(body: &Value, id: &str) -> bool {
    body["items"].as_array().is_some_and(|items| items.iter().any(|item| item["id"] == id))
}

/// Runs the smoke test against `options.base`, printing one line per request to `out`.
pub(crate) async fn run(options: &Options, out: &mut dyn std::io::Write) -> Result<(), Failure> {
    let client = reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|error| fail("setup", format!("no HTTP client: {error}")))?;
    let settle_until = Instant::now() + options.settle;
    let _ = writeln!(out, "{}: waiting up to {} s for the blog to settle (--settle)", options.base, options.settle.as_secs());
    let mut run = Run { client, options, out, settle_until, wrote: false };
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
    Ok(())
}

/// The writes, each read back, and the copies awaited; then everything written is taken back.
async fn write_and_read(run: &mut Run<'_>) -> Result<(), Failure> {
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
    let picture = add_picture(run, &post_id).await?;
    let comment_text = format!("A smoke test's comment on {title}.");
    let comment_body = json!({"userId": user_id, "content": comment_text});
    let comment = run.expect("C3", Method::POST, &format!("/api/posts/{post_id}/comments"), Some(comment_body), 201).await?;
    let comment_id = comment.body["id"].as_str().unwrap_or_default().to_owned();
    let like = json!({"userId": user_id});
    run.expect("C4", Method::POST, &format!("/api/posts/{post_id}/likes"), Some(like), 201).await?;

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
    if let Some(picture) = &picture {
        run.until_status("pic", "gone with its post", picture, deleted, 404).await?;
    }
    let none_listed = |body: &Value| !lists(body, &post_id);
    let gone_users = run.until("Q3", "gone from users", &q3, deleted, none_listed).await?;
    let gone_feed = run.until("Q6", "gone from feed", "/api/feed?limit=100", deleted, none_listed).await?;
    let _ = writeln!(
        run.out,
        "ok: copies appeared in users after {:.1} s and in feed after {:.1} s; went after {:.1} s and {:.1} s",
        in_users.as_secs_f64(),
        in_feed.as_secs_f64(),
        gone_users.as_secs_f64(),
        gone_feed.as_secs_f64()
    );
    Ok(())
}

/// Adds a small picture to the post and reads it back as a reader's browser would: stored
/// (Blob Storage on Azure, with the app's identity) and served without the database. Answers
/// its address; `None` where the blog keeps no pictures (501), which is said and not a failure.
async fn add_picture(run: &mut Run<'_>, post_id: &str) -> Result<Option<String>, Failure> {
    use reqwest::Method;
    let path = format!("/api/posts/{post_id}/pictures?alt=A%20smoke%20test");
    let added = run.send_body("pic", Method::POST, &path, Some(Body::Picture(smoke_picture()))).await?;
    if added.status == 501 {
        let _ = writeln!(run.out, "pic  this blog keeps no pictures (BLOG_PICTURES is not set): not checked");
        return Ok(None);
    }
    let added = checked("pic", &Method::POST, &path, added, 201)?;
    let Some(url) = added.body["url"].as_str().map(str::to_owned) else {
        return Err(fail("pic", format!("the added picture has no url: {}", added.body)));
    };
    let shown = run.expect("pic", Method::GET, &url, None, 200).await?;
    if shown.operations != "0" {
        return Err(fail("pic", format!("GET {url} read the database ({} operations): a picture reads none", shown.operations)));
    }
    Ok(Some(url))
}

/// A 64×64 PNG, made here: two colours, so that it is a picture and not a blank.
fn smoke_picture() -> Vec<u8> {
    let pixels = image::RgbImage::from_fn(64, 64, |x, y| {
        if (x / 8 + y / 8) % 2 == 0 { image::Rgb([0, 120, 212]) } else { image::Rgb([255, 255, 255]) }
    });
    let mut png = std::io::Cursor::new(Vec::new());
    pixels.write_to(&mut png, image::ImageFormat::Png).expect("a PNG is written to memory");
    png.into_inner()
}

/// The caller's user: read (Q1), or created (C1) with a name of its own the first time. A user is
/// never deleted (the API has no such request), so it stays for the next run.
async fn ensure_user(run: &mut Run<'_>, user_id: &str) -> Result<Value, Failure> {
    use reqwest::Method;
    if let Some(user) = own_user(run, user_id).await? {
        return Ok(user);
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

/// Q1 of the caller's own user: `None` when they have none yet.
async fn own_user(run: &mut Run<'_>, user_id: &str) -> Result<Option<Value>, Failure> {
    let read = run.send("Q1", reqwest::Method::GET, &format!("/api/users/{user_id}"), None).await?;
    match read.status {
        200 => Ok(Some(read.body)),
        404 => Ok(None),
        other => Err(fail("Q1", format!("GET /api/users/{user_id} answered {other}: {}", read.why()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `handler smoke`'s parser alone.
    #[derive(clap::Parser)]
    #[command(name = "smoke")]
    struct Smoke {
        #[command(flatten)]
        args: Args,
    }

    /// Parses as `handler smoke <args>` does; an error is clap's text (or [`Args::options`]'s).
    fn parse(args: &[&str], variable: Option<&str>) -> Result<Options, String> {
        use clap::Parser;
        let parsed = Smoke::try_parse_from(std::iter::once("smoke").chain(args.iter().copied()))
            .map_err(|error| error.render().to_string())?;
        parsed.args.options(variable.map(str::to_owned))
    }

    #[test]
    fn arguments_are_read_and_bad_ones_named() {
        let options = parse(&["http://localhost:7071/", "--dev-user", "alice", "--wait", "5"], None).unwrap();
        assert_eq!(options.base, "http://localhost:7071");
        assert_eq!(options.credential, Credential::DevUser("alice".into()));
        assert_eq!(options.wait, Duration::from_secs(5));
        assert_eq!(options.settle, DEFAULT_SETTLE);
        assert_eq!(parse(&["http://x"], None).unwrap().wait, DEFAULT_WAIT);
        assert_eq!(parse(&["http://x", "--settle", "3"], None).unwrap().settle, Duration::from_secs(3));
        assert_eq!(parse(&["https://x.azurewebsites.net"], Some("t0ken")).unwrap().credential, Credential::Token("t0ken".into()));
        assert_eq!(parse(&["https://x.azurewebsites.net"], Some(" ")).unwrap().credential, Credential::Anonymous);
        assert_eq!(
            parse(&["https://x.azurewebsites.net", "--token", "a"], Some("b")).unwrap().credential,
            Credential::Token("a".into())
        );
        assert_eq!(parse(&["https://x.azurewebsites.net"], None).unwrap().credential, Credential::Anonymous);

        let refused = |args: &[&str], variable: Option<&str>, says: &str| {
            let error = parse(args, variable).unwrap_err();
            assert!(error.contains(says), "{args:?}: {error}");
        };
        refused(&[], None, "<BASE_URL>");
        refused(&["localhost:7071"], None, "not an http or https URL");
        refused(&["not a url"], None, "not a URL");
        refused(&["http://x", "--token", "a", "--dev-user", "b"], None, "cannot be used with");
        refused(&["http://x", "--dev-user", "b"], Some("a"), "not both");
        refused(&["http://x", "--frobnicate"], None, "unexpected argument '--frobnicate'");
        refused(&["http://x", "--wait", "soon"], None, "invalid value 'soon' for '--wait <SECONDS>'");
        refused(&["http://x", "--settle", "-1"], None, "invalid value '-1' for '--settle <SECONDS>'");
        refused(&["http://x", "--token"], None, "a value is required for '--token <ACCESS_TOKEN>'");
        refused(&["http://x", "http://y"], None, "unexpected argument 'http://y'");
        refused(&["http://x/?a=1"], None, "without a query");
    }

    /// 1 s, doubled each retry, up to 15 s, and no further.
    #[test]
    fn the_pauses_double_from_one_second_up_to_fifteen() {
        let pauses: Vec<u64> = std::iter::successors(Some(FIRST_PAUSE), |&pause| Some(next_pause(pause)))
            .take(7)
            .map(|pause| pause.as_secs())
            .collect();
        assert_eq!(pauses, [1, 2, 4, 8, 15, 15, 15]);
    }

    #[test]
    fn jitter_adds_at_most_a_tenth() {
        let pause = Duration::from_secs(4);
        assert_eq!(jittered(pause, 0), pause);
        assert_eq!(jittered(pause, 1000), pause);
        for random in [1, 499, 999, u64::MAX] {
            let jittered = jittered(pause, random);
            assert!(jittered >= pause && jittered < pause + pause / 10, "{random}: {jittered:?}");
        }
        assert_eq!(shown(Duration::from_millis(4_300)), "4 s");
        assert_eq!(shown(Duration::from_millis(400)), "0.4 s");
    }

    /// 5xx, 408 and 429 settle by themselves; 401/403 only while the sign-in settles; every other
    /// 4xx, and every success, is the blog's own answer.
    #[test]
    fn what_settles_by_itself_is_retried_and_nothing_else() {
        for status in [500, 502, 503, 504, 507, 408, 429] {
            assert!(settling(status, false).is_some() && settling(status, true).is_some(), "{status}");
        }
        for status in [401, 403] {
            assert!(settling(status, true).is_some(), "{status}");
            assert_eq!(settling(status, false), None, "{status}");
        }
        for status in [200, 201, 204, 304, 400, 404, 405, 409, 412, 413, 415, 422] {
            assert_eq!(settling(status, true), None, "{status}");
        }
        assert_eq!(settling(503, false), Some("the app is still starting"));
        assert!(settling(502, false).unwrap().contains("no answer from the app"));
        // Only a server's failure leaves in doubt whether a write was done.
        assert!([500, 502, 503, 504].into_iter().all(may_have_been_done));
        assert!(![401, 403, 408, 429].into_iter().any(may_have_been_done));
        assert_eq!(status_text(503), "503 Service Unavailable");
        assert_eq!(status_text(599), "599");
    }
}
