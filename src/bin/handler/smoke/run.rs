//! The smoke test's client. It sends one request and prints its line, retried while the
//! deployment settles (`answer::settling`). A write that may have been applied is sent again
//! only as what it is. It also waits for the copies, polled until they appear or go.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::answer::{
    Answer, Unsettled, checked, jittered, may_have_been_done, next_pause, no_answer, settling,
    shown, status_text,
};
use super::{Credential, FIRST_PAUSE, Failure, Options, POLL_EVERY, fail};

/// A smoke test run: the client, and where its lines go.
pub(super) struct Run<'a> {
    pub(super) client: reqwest::Client,
    pub(super) options: &'a Options,
    pub(super) out: &'a mut dyn std::io::Write,
    /// Until when what settles by itself is waited out: `--settle` from the start.
    pub(super) settle_until: Instant,
    /// Whether a write has been accepted (see [`Run::sign_in_settling`]).
    pub(super) wrote: bool,
}

/// What a request sends.
pub(super) enum Body {
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
    pub(super) async fn send(
        &mut self,
        step: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Answer, Failure> {
        self.send_body(step, method, path, body.map(Body::Json)).await
    }

    /// [`Run::send`], with a body of any kind.
    pub(super) async fn send_body(
        &mut self,
        step: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<Body>,
    ) -> Result<Answer, Failure> {
        let answer = self.settled(step, &method, path, body.as_ref()).await?;
        self.print(step, &method, path, &answer, "");
        if let Some(earlier) =
            answer.unsure_attempt.as_deref().filter(|_| method != reqwest::Method::GET)
        {
            let _ = writeln!(
                self.out,
                "{step:<4} sent again with its Idempotency-Key after {earlier}: answered {}, made once",
                answer.status
            );
        }
        Ok(answer)
    }

    /// Sends one request until its answer is the blog's own. Until `settle_until`, an answer
    /// that settles by itself ([`settling`], or no answer) is retried after a pause. The pause
    /// starts at [`FIRST_PAUSE`] for each request and doubles, with one line that says what was
    /// answered. Past `settle_until`, such an answer fails the step, saying so. Prints nothing
    /// else.
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
            format!(
                "{last}; not retried: the {settle} s the blog had to settle (--settle) are over"
            )
        }
    }

    /// The answer as one that settles by itself, or `None` for the blog's own.
    fn unsettled(
        &self,
        method: &reqwest::Method,
        path: &str,
        answer: &Answer,
    ) -> Option<Unsettled> {
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
        let mut request =
            self.client.request(method.clone(), format!("{}{path}", self.options.base));
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        request = match &self.options.credential {
            Credential::Anonymous => request,
            Credential::Token(token) => request.bearer_auth(token),
            Credential::DevUser(user) => request.header("x-dev-user", user),
        };
        request = match body {
            Some(Body::Json(body)) => {
                request.header("content-type", "application/json").body(body.to_string())
            }
            Some(Body::Picture(bytes)) => {
                request.header("content-type", "image/png").body(bytes.clone())
            }
            None => request,
        };
        let started = Instant::now();
        let response = request
            .send()
            .await
            .map_err(|error| no_answer(method, path, "got no answer", &error))?;
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .unwrap_or("-")
                .to_owned()
        };
        let (charge, operations) = (header("x-ms-request-charge"), header("x-cosmos-operations"));
        let is_json = header("content-type").contains("json");
        let text = response
            .text()
            .await
            .map_err(|error| no_answer(method, path, "the answer broke off", &error))?;
        let latency = started.elapsed();
        let body = if is_json {
            serde_json::from_str(&text).unwrap_or(Value::Null)
        } else {
            Value::String(text)
        };
        Ok(Answer { status, body, charge, operations, latency, unsure_attempt: None })
    }

    /// One line: the step, the request, its status, latency, request units and operations.
    fn print(
        &mut self,
        step: &str,
        method: &reqwest::Method,
        path: &str,
        answer: &Answer,
        note: &str,
    ) {
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
    pub(super) async fn expect(
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
    pub(super) async fn until(
        &mut self,
        step: &str,
        what: &str,
        path: &str,
        since: Instant,
        holds: impl Fn(&Value) -> bool,
    ) -> Result<Duration, Failure> {
        let hint = "the change feed did not deliver (is the change-feed function running? `handler \
                    dead-letters` lists what it set aside)";
        self.until_else(step, what, path, since, holds, hint).await
    }

    /// [`Run::until`], whose failure says `hint` of what did not happen.
    async fn until_else(
        &mut self,
        step: &str,
        what: &str,
        path: &str,
        since: Instant,
        holds: impl Fn(&Value) -> bool,
        hint: &str,
    ) -> Result<Duration, Failure> {
        let seen = |answer: &Answer| match answer.status {
            200 => Seen::holds(holds(&answer.body)),
            other => Seen::Wrong(format!("GET {path} answered {other}: {}", answer.why())),
        };
        let gave_up = |polls: u32, wait: u64, _: &Answer| {
            format!("not {what} within {wait} s ({polls} polls of GET {path}): {hint}")
        };
        self.poll(step, what, path, since, seen, gave_up).await
    }

    /// [`Run::until`] for what the timer function does: its failure names the timer.
    pub(super) async fn until_timer(
        &mut self,
        step: &str,
        what: &str,
        path: &str,
        since: Instant,
        holds: impl Fn(&Value) -> bool,
    ) -> Result<Duration, Failure> {
        let hint = "is the timer function PublishScheduled running? It runs once a minute, so give \
                    --wait 90 or more";
        self.until_else(step, what, path, since, holds, hint).await
    }

    /// Polls `GET path` until it answers `status`; returns how long it took from `since`.
    pub(super) async fn until_status(
        &mut self,
        step: &str,
        what: &str,
        path: &str,
        since: Instant,
        status: u16,
    ) -> Result<Duration, Failure> {
        let gave_up = |_: u32, wait: u64, answer: &Answer| {
            format!("GET {path} still answers {} after {wait} s", answer.status)
        };
        self.poll(step, what, path, since, |answer| Seen::holds(answer.status == status), gave_up)
            .await
    }

    /// Polls `GET path` until `seen` says the answer shows `what` ([`Seen::Wrong`] fails the
    /// step at once), for at most `--wait`; `gave_up` says why it failed past that, from the polls, the
    /// seconds waited and the last answer. Only the last poll is printed.
    async fn poll(
        &mut self,
        step: &str,
        what: &str,
        path: &str,
        since: Instant,
        seen: impl Fn(&Answer) -> Seen,
        gave_up: impl Fn(u32, u64, &Answer) -> String,
    ) -> Result<Duration, Failure> {
        let get = reqwest::Method::GET;
        let deadline = Instant::now() + self.options.wait;
        let mut polls = 0;
        loop {
            polls += 1;
            let answer = self.settled(step, &get, path, None).await?;
            match seen(&answer) {
                Seen::Wrong(why) => {
                    self.print(step, &get, path, &answer, "");
                    return Err(fail(step, why));
                }
                Seen::Yes => {
                    let took = since.elapsed();
                    self.print(
                        step,
                        &get,
                        path,
                        &answer,
                        &format!("  {what} after {:.1} s ({polls} polls)", took.as_secs_f64()),
                    );
                    return Ok(took);
                }
                Seen::NotYet => {}
            }
            if Instant::now() >= deadline {
                let wait = self.options.wait.as_secs();
                self.print(
                    step,
                    &get,
                    path,
                    &answer,
                    &format!("  still not {what} after {wait} s"),
                );
                return Err(fail(step, gave_up(polls, wait, &answer)));
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }
}

/// What a poll's answer shows of what [`Run::poll`] waits for.
enum Seen {
    /// It is there.
    Yes,
    /// Not yet: poll again.
    NotYet,
    /// An answer no later poll can mend, and why: the step fails at once.
    Wrong(String),
}

impl Seen {
    fn holds(holds: bool) -> Seen {
        if holds { Seen::Yes } else { Seen::NotYet }
    }
}
