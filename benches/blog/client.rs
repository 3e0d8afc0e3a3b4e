//! An HTTP client for the handler that keeps, of every answer, what the benchmark reports: the
//! latency seen by the client and the handler's own cost headers.

use std::time::{Duration, Instant};

use serde_json::Value;

/// One request as the client saw it.
#[derive(Clone, Debug)]
pub(crate) struct Sample {
    pub status: u16,
    pub latency: Duration,
    /// `x-ms-request-charge`: the RU of every Cosmos operation the request made.
    pub charge: f64,
    /// `x-cosmos-operations`: how many Cosmos operations the request made.
    pub operations: u64,
    /// `x-cosmos-queries`: how many of them were queries (the rest point reads and writes);
    /// `None` from a build that does not send it. (The reader-load bench prices by it.)
    #[allow(dead_code)]
    pub queries: Option<u64>,
    /// `x-cosmos-partitions`: the logical partitions they touched, per container.
    pub partitions: String,
}

/// An answer: its sample and its JSON body.
pub(crate) struct Answer {
    pub sample: Sample,
    pub body: Value,
}

impl Answer {
    pub(crate) fn ok(&self) -> bool {
        (200..300).contains(&self.sample.status)
    }

    /// The `id` of a created item.
    pub(crate) fn id(&self) -> String {
        self.body["id"].as_str().unwrap_or_else(|| panic!("no id in {}", self.body)).to_owned()
    }

    /// The ids of a list page's items, in order.
    pub(crate) fn item_ids(&self) -> Vec<String> {
        self.body["items"].as_array().map_or_else(Vec::new, |items| {
            items.iter().filter_map(|item| item["id"].as_str().map(str::to_owned)).collect()
        })
    }
}

#[derive(Clone)]
pub(crate) struct Client {
    base: String,
    http: reqwest::Client,
}

impl Client {
    /// `base` is `http://127.0.0.1:<port>`. One connection pool, kept alive, as a front end would.
    pub(crate) fn new(base: String) -> Client {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .timeout(Duration::from_secs(60))
            .build()
            .expect("an HTTP client");
        Client { base, http }
    }

    /// [`Client::new`] whose requests may take `timeout` (benches/search.rs: Q8 on the embedded
    /// store takes longer as the posts grow).
    #[allow(dead_code)]
    pub(crate) fn with_timeout(base: String, timeout: Duration) -> Client {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .timeout(timeout)
            .build()
            .expect("an HTTP client");
        Client { base, http }
    }

    pub(crate) async fn get(&self, path: &str) -> Answer {
        self.send(self.http.get(format!("{}{path}", self.base))).await
    }

    /// A read as `caller`: what only they may read (their drafts, their post's revisions).
    #[allow(dead_code)]
    pub(crate) async fn get_as(&self, caller: &str, path: &str) -> Answer {
        self.send(self.http.get(format!("{}{path}", self.base)).header("x-dev-user", caller)).await
    }

    /// A write as `caller`: every write needs a signed-in caller, who may only write as
    /// themselves. The bench runs the handler with `BLOG_AUTH=development`, where the caller is
    /// whoever `x-dev-user` names (a user's id is their principal id).
    pub(crate) async fn post(&self, caller: &str, path: &str, body: &Value) -> Answer {
        self.send(
            self.http.post(format!("{}{path}", self.base)).header("x-dev-user", caller).json(body),
        )
        .await
    }

    /// [`Client::post`] with an `Idempotency-Key`: the write is made once per key (benches/faults.rs).
    #[allow(dead_code)]
    pub(crate) async fn post_keyed(
        &self,
        caller: &str,
        path: &str,
        body: &Value,
        key: &str,
    ) -> Answer {
        let request = self
            .http
            .post(format!("{}{path}", self.base))
            .header("x-dev-user", caller)
            .header("idempotency-key", key);
        self.send(request.json(body)).await
    }

    /// [`Client::delete`] with an `Idempotency-Key` (benches/keyed.rs).
    #[allow(dead_code)]
    pub(crate) async fn delete_keyed(&self, caller: &str, path: &str, key: &str) -> Answer {
        self.send(
            self.http
                .delete(format!("{}{path}", self.base))
                .header("x-dev-user", caller)
                .header("idempotency-key", key),
        )
        .await
    }

    pub(crate) async fn put(&self, caller: &str, path: &str, body: &Value) -> Answer {
        self.send(
            self.http.put(format!("{}{path}", self.base)).header("x-dev-user", caller).json(body),
        )
        .await
    }

    pub(crate) async fn delete(&self, caller: &str, path: &str) -> Answer {
        self.send(self.http.delete(format!("{}{path}", self.base)).header("x-dev-user", caller))
            .await
    }

    /// Sends, times until the whole body is read, and parses the answer. A failure to connect is
    /// a bench failure, not a figure: it panics with the reason.
    async fn send(&self, request: reqwest::RequestBuilder) -> Answer {
        let started = Instant::now();
        let response = request
            .send()
            .await
            .unwrap_or_else(|error| panic!("the handler did not answer: {error}"));
        let status = response.status().as_u16();
        let header = |name: &str| {
            response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
        };
        let charge = header("x-ms-request-charge").and_then(|v| v.parse().ok()).unwrap_or(0.0);
        let operations = header("x-cosmos-operations").and_then(|v| v.parse().ok()).unwrap_or(0);
        let queries = header("x-cosmos-queries").and_then(|v| v.parse().ok());
        let partitions = header("x-cosmos-partitions").unwrap_or_default();
        let bytes = response.bytes().await.unwrap_or_default();
        let latency = started.elapsed();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Answer { sample: Sample { status, latency, charge, operations, queries, partitions }, body }
    }
}

/// Percentiles and means of a set of samples.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stats {
    pub count: usize,
    pub errors: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub mean_charge: f64,
    pub mean_operations: f64,
    pub min_operations: u64,
    pub max_operations: u64,
    /// Each `x-cosmos-partitions` value seen, with how many requests answered it.
    pub partitions: Vec<(String, usize)>,
}

impl Stats {
    pub(crate) fn of(samples: &[Sample]) -> Stats {
        if samples.is_empty() {
            return Stats::default();
        }
        let mut latencies: Vec<f64> =
            samples.iter().map(|s| s.latency.as_secs_f64() * 1000.0).collect();
        let n = samples.len() as f64;
        Stats {
            count: samples.len(),
            errors: samples.iter().filter(|s| !(200..300).contains(&s.status)).count(),
            p50_ms: percentile(&mut latencies, 50.0),
            p99_ms: percentile(&mut latencies, 99.0),
            mean_charge: samples.iter().map(|s| s.charge).sum::<f64>() / n,
            mean_operations: samples.iter().map(|s| s.operations as f64).sum::<f64>() / n,
            min_operations: samples.iter().map(|s| s.operations).min().unwrap_or(0),
            max_operations: samples.iter().map(|s| s.operations).max().unwrap_or(0),
            partitions: tally(samples.iter().map(|s| s.partitions.as_str())),
        }
    }

    /// "users=1, posts=1" when every request touched the same partitions, else each set seen
    /// with its share of the requests.
    pub(crate) fn partitions_text(&self) -> String {
        match self.partitions.as_slice() {
            [] => "–".to_owned(),
            [(only, _)] if only.is_empty() => "none".to_owned(),
            [(only, _)] => only.clone(),
            several => several
                .iter()
                .map(|(partitions, count)| {
                    format!(
                        "{} ({}%)",
                        if partitions.is_empty() { "none" } else { partitions },
                        count * 100 / self.count
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
        }
    }

    /// "1" when every request made the same number of operations, else "mean (min–max)".
    pub(crate) fn operations_text(&self) -> String {
        if self.min_operations == self.max_operations {
            self.min_operations.to_string()
        } else {
            format!("{:.1} ({}–{})", self.mean_operations, self.min_operations, self.max_operations)
        }
    }
}

/// Each distinct value with how often it occurs, most frequent first.
fn tally<'a>(values: impl Iterator<Item = &'a str>) -> Vec<(String, usize)> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for value in values {
        match counts.iter_mut().find(|(seen, _)| seen == value) {
            Some((_, count)) => *count += 1,
            None => counts.push((value.to_owned(), 1)),
        }
    }
    counts.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
    counts
}

/// The nearest-rank percentile of `values` (sorted in place), in their unit.
pub(crate) fn percentile(values: &mut [f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * values.len() as f64).ceil() as usize;
    values[rank.clamp(1, values.len()) - 1]
}

pub(crate) fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
