//! `handler smoke <base-url>`: proves that a running blog works, end to end, from outside, the
//! way its users reach it. It sends the requests of the article (C1–C7, Q1–Q6) over HTTP,
//! checks their answers, and awaits the change feed's copies in Q3 and Q6. It prints one line
//! per request (status, latency, request units, Cosmos DB operations) and stops at the first
//! thing wrong, naming the step. `azd up` runs it after each deployment; `cargo run -- smoke`
//! runs it against a local blog.
//!
//! Without a credential it only reads (anonymous reads are public). With `--token` (an Entra ID
//! access token, as App Service Authentication takes it) or `--dev-user` (the development
//! sign-in of `BLOG_AUTH=development`), it also writes. It makes sure the caller has a user,
//! writes a post, adds a picture to it and reads the picture back. On Azure the picture goes to
//! Blob Storage with the app's identity; a blog with no picture store says so and is not
//! failed. Then it writes a comment and a like, waits for the post's copies and reads
//! everything back. Last, it takes the like back, deletes what it wrote, and waits for the
//! copies and the picture to go.
//!
//! It runs right after `azd deploy`, when a new deployment answers for a while with what
//! settles by itself. It gets 5xx and refused or broken connections while the Functions host
//! starts and mounts the app's package. It gets 401/403 while a new app registration or role
//! assignment reaches everything. For `--settle` seconds from its start (default 300) it waits
//! those out, each request retried after a pause that doubles, one line per retry (`settling`
//! says which answers, `Run::settled` how). Any other answer is the blog's own and is checked
//! at once.

mod answer;
mod run;
mod steps;
#[cfg(test)]
mod tests;
use std::time::{Duration, Instant};

use run::Run;
use steps::write_and_read;

/// How long the copies may take to appear (or go) when `--wait` does not say: the change feed's
/// delay under the Functions host is seconds (its poll interval, 5 s by default), more on a cold
/// start of the trigger.
pub(crate) const DEFAULT_WAIT: Duration = Duration::from_secs(120);
/// How often the copies are looked for.
const POLL_EVERY: Duration = Duration::from_millis(250);
/// One request's limit: past it the blog counts as not answering.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a new deployment may take to settle when `--settle` does not say. The Functions
/// host's cold start on Flex Consumption (the package mounted, the host and the handler
/// started) takes a minute or two. A new role assignment or app registration takes minutes to
/// be accepted everywhere.
pub(crate) const DEFAULT_SETTLE: Duration = Duration::from_secs(300);
/// The pause before a request's first retry; each next one is twice as long, up to
/// [`LONGEST_PAUSE`]. So a blog that settles in a second is not kept waiting long, and one that
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
                return Err(format!(
                    "give --token or --dev-user, not both ({TOKEN_VARIABLE} is set, and is a token)"
                ));
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

/// Runs the smoke test against `options.base`, printing one line per request to `out`.
pub(crate) async fn run(options: &Options, out: &mut dyn std::io::Write) -> Result<(), Failure> {
    let client = reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|error| fail("setup", format!("no HTTP client: {error}")))?;
    let settle_until = Instant::now() + options.settle;
    let _ = writeln!(
        out,
        "{}: waiting up to {} s for the blog to settle (--settle)",
        options.base,
        options.settle.as_secs()
    );
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
    let _ = writeln!(
        run.out,
        "reads only: pass --token (or BLOG_SMOKE_TOKEN) or --dev-user to check the writes too"
    );
    Ok(())
}
