//! What the handler says about the requests it answers.
//!
//! Under the Functions host every line on stdout becomes a row of Application Insights, billed
//! by the gigabyte. A line for each of a million page views a day is about 30 GB a month, more
//! than the rest of the bill together (BENCHMARKS.md, "The whole bill"). So a read that went
//! well is counted, not written. Each minute, one line per route and method says how many
//! requests it had, their statuses, request units, round trips and latency (`blog::http:
//! requests`). A request still has a line of its own (`blog::http: request`) where an operator
//! looks for that one request. That is a write that was made, an answer 5xx, or an answer that
//! took [`SLOW`] or longer. At most [`OWN_LINES_PER_MINUTE`] of those a minute on an instance,
//! so that nobody can buy the blog a bill by sending it requests. The others are counted in the
//! minute's lines and said to be left out. `RUST_LOG=blog::http=debug` gives every request its
//! line again.
//!
//! The promise is per instance and per minute: each instance writes its own lines, and a minute
//! is written when it ends or when the handler is stopped in order. The Functions host kills its
//! worker instead (`shutdown_signal` in `src/bin/handler/main.rs`), which loses that instance's
//! last minute of counts, as it loses the last 50 ms of any line.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::http::Method;

/// How long a minute's counts are gathered before they are written.
pub(crate) const SUMMARY_PERIOD: Duration = Duration::from_secs(60);

/// An answer this slow has a line of its own, whatever it was.
pub(crate) const SLOW: Duration = Duration::from_secs(1);

/// The most requests' own lines an instance writes in a minute: at a kilobyte a row, no more
/// than 2.6 GB a month an instance whatever is sent to it, and room for a write a second.
pub(crate) const OWN_LINES_PER_MINUTE: u64 = 60;

/// The route of a request no route matched, in the minute's lines: one name for all of them,
/// so that made-up paths cannot grow the counts without bound.
const UNMATCHED: &str = "(none)";

/// A request, answered: what its lines say of it.
pub(crate) struct Answered<'a> {
    pub(crate) method: &'a Method,
    /// The route as declared (`/posts/{postId}`), or `None` where no route matched.
    pub(crate) route: Option<&'a str>,
    /// The path, where no route matched (its own line names it).
    pub(crate) path: &'a str,
    pub(crate) status: u16,
    pub(crate) charge: Hundredths,
    pub(crate) operations: u64,
    /// The logical partitions touched, as `x-cosmos-partitions` says them ("" for none).
    pub(crate) partitions: &'a str,
    pub(crate) latency: Tenths,
    pub(crate) correlation: &'a Correlation,
}

/// A request's own line, at a level given by a constant (`tracing`'s macros take no variable).
macro_rules! own_line {
    ($level:expr, $answered:expr) => {{
        let answered: &Answered<'_> = $answered;
        tracing::event!(
            target: "blog::http",
            $level,
            method = %answered.method,
            route = answered.route.unwrap_or(answered.path),
            status = answered.status,
            ru = %answered.charge,
            operations = answered.operations,
            partitions = answered.partitions,
            latency_ms = %answered.latency,
            invocation_id = answered.correlation.invocation_id.as_deref(),
            trace_id = answered.correlation.trace_id.as_deref(),
            "request"
        )
    }};
}

/// This instance's counts of the minute under way, and its requests' own lines.
pub(crate) struct RequestLog {
    minute: Mutex<Minute>,
    /// Own lines asked for this minute, written or not.
    own_lines: AtomicU64,
}

struct Minute {
    started: Instant,
    /// By route, then by method: both come from a bounded set (the routes the router declares
    /// and [`UNMATCHED`]; [`MethodKind`]), so the map's size is bounded whatever is sent.
    routes: HashMap<Box<str>, Vec<(MethodKind, Counts)>>,
}

impl Default for RequestLog {
    fn default() -> RequestLog {
        RequestLog {
            minute: Mutex::new(Minute { started: Instant::now(), routes: HashMap::new() }),
            own_lines: AtomicU64::new(0),
        }
    }
}

impl RequestLog {
    /// Counts `answered` in the minute's lines, and writes its own line where it deserves one
    /// (and the minute has room), or at `debug`.
    pub(crate) fn log(&self, answered: &Answered<'_>) {
        self.count(answered);
        let made_a_write = answered.route.is_some()
            && !matches!(*answered.method, Method::GET | Method::HEAD | Method::OPTIONS)
            && answered.status < 400;
        let deserves_a_line = made_a_write
            || answered.status >= 500
            || answered.latency.0 >= SLOW.as_micros() as u64 / 100;
        if deserves_a_line && self.own_lines.fetch_add(1, Ordering::Relaxed) < OWN_LINES_PER_MINUTE
        {
            own_line!(tracing::Level::INFO, answered);
        } else {
            own_line!(tracing::Level::DEBUG, answered);
        }
    }

    fn count(&self, answered: &Answered<'_>) {
        let route = answered.route.unwrap_or(UNMATCHED);
        let method = MethodKind::of(answered.method);
        let mut minute = self.minute.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !minute.routes.contains_key(route) {
            minute.routes.insert(route.into(), Vec::new());
        }
        let methods = minute.routes.get_mut(route).expect("inserted above");
        let counts = match methods.iter().position(|(kind, _)| *kind == method) {
            Some(at) => &mut methods[at].1,
            None => {
                methods.push((method, Counts::default()));
                &mut methods.last_mut().expect("pushed").1
            }
        };
        counts.add(answered);
    }

    /// Writes the minute's lines, one per route and method that had requests, and starts the
    /// next minute.
    pub(crate) fn write_minute(&self) {
        let (seconds, routes) = {
            let mut minute = self.minute.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let seconds = minute.started.elapsed().as_secs();
            minute.started = Instant::now();
            (seconds, std::mem::take(&mut minute.routes))
        };
        let asked = self.own_lines.swap(0, Ordering::Relaxed);
        let mut routes: Vec<_> = routes.into_iter().collect();
        routes.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (route, methods) in routes {
            for (method, counts) in methods {
                tracing::info!(
                    target: "blog::http",
                    method = %method.name(),
                    route = &*route,
                    count = counts.requests,
                    status_2xx = counts.statuses[2],
                    status_3xx = counts.statuses[3],
                    status_4xx = counts.statuses[4],
                    status_5xx = counts.statuses[5],
                    ru = %Hundredths(counts.charge),
                    operations = counts.operations,
                    latency_p50_ms = %counts.percentile(0.50),
                    latency_p95_ms = %counts.percentile(0.95),
                    latency_p99_ms = %counts.percentile(0.99),
                    latency_max_ms = %Tenths(counts.slowest),
                    seconds,
                    "requests"
                );
            }
        }
        if asked > OWN_LINES_PER_MINUTE {
            tracing::info!(
                target: "blog::http",
                left_out = asked - OWN_LINES_PER_MINUTE,
                limit = OWN_LINES_PER_MINUTE,
                seconds,
                "requests' own lines left out"
            );
        }
    }

    /// Writes the minute's lines every [`SUMMARY_PERIOD`], until dropped.
    pub(crate) async fn write_each_minute(self: std::sync::Arc<Self>) {
        let mut ticks =
            tokio::time::interval_at(tokio::time::Instant::now() + SUMMARY_PERIOD, SUMMARY_PERIOD);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            self.write_minute();
        }
    }
}

/// The methods the minute's lines tell apart; any other is "other".
#[derive(Clone, Copy, PartialEq, Eq)]
enum MethodKind {
    Get,
    Head,
    Post,
    Put,
    Patch,
    Delete,
    Options,
    Other,
}

impl MethodKind {
    fn of(method: &Method) -> MethodKind {
        match *method {
            Method::GET => MethodKind::Get,
            Method::HEAD => MethodKind::Head,
            Method::POST => MethodKind::Post,
            Method::PUT => MethodKind::Put,
            Method::PATCH => MethodKind::Patch,
            Method::DELETE => MethodKind::Delete,
            Method::OPTIONS => MethodKind::Options,
            _ => MethodKind::Other,
        }
    }

    fn name(self) -> &'static str {
        match self {
            MethodKind::Get => "GET",
            MethodKind::Head => "HEAD",
            MethodKind::Post => "POST",
            MethodKind::Put => "PUT",
            MethodKind::Patch => "PATCH",
            MethodKind::Delete => "DELETE",
            MethodKind::Options => "OPTIONS",
            MethodKind::Other => "other",
        }
    }
}

/// One route and method's minute.
#[derive(Default)]
struct Counts {
    requests: u64,
    /// By the status's first digit (1xx to 5xx; index 0 unused).
    statuses: [u64; 6],
    /// Request units, in hundredths.
    charge: u64,
    operations: u64,
    latency: Latencies,
    /// The slowest answer's latency, in tenths of a millisecond.
    slowest: u64,
}

impl Counts {
    fn add(&mut self, answered: &Answered<'_>) {
        self.requests += 1;
        self.statuses[usize::from(answered.status / 100).min(5)] += 1;
        self.charge += answered.charge.0;
        self.operations += answered.operations;
        self.latency.add(answered.latency.0);
        self.slowest = self.slowest.max(answered.latency.0);
    }

    /// A latency percentile: its bucket's upper bound, or the slowest answer where that is less.
    fn percentile(&self, quantile: f64) -> Tenths {
        Tenths(self.latency.percentile(quantile).0.min(self.slowest))
    }
}

/// Latencies by quarter octaves of tenths of a millisecond: a percentile read from them is
/// within 19 % above the true one, in 92 counters, whatever the number of requests.
struct Latencies([u32; Latencies::BUCKETS]);

impl Default for Latencies {
    fn default() -> Latencies {
        Latencies([0; Latencies::BUCKETS])
    }
}

impl Latencies {
    /// Up to 2^23 tenths, 14 minutes: longer than any request may take.
    const BUCKETS: usize = 4 * 23;

    fn bucket(tenths: u64) -> usize {
        // The bucket of `t` holds (2^(i/4), 2^((i+1)/4)] - 1 tenths.
        let index = (4.0 * ((tenths + 1) as f64).log2()).floor() as usize;
        index.min(Latencies::BUCKETS - 1)
    }

    fn add(&mut self, tenths: u64) {
        let bucket = &mut self.0[Latencies::bucket(tenths)];
        *bucket = bucket.saturating_add(1);
    }

    /// The upper bound of the bucket the `quantile`'s request falls in.
    fn percentile(&self, quantile: f64) -> Tenths {
        let total: u64 = self.0.iter().map(|&count| u64::from(count)).sum();
        let wanted = ((total as f64) * quantile).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (index, &count) in self.0.iter().enumerate() {
            seen += u64::from(count);
            if seen >= wanted {
                let upper = 2f64.powf((index + 1) as f64 / 4.0) - 1.0;
                return Tenths(upper.floor() as u64);
            }
        }
        Tenths(0)
    }
}

/// What ties a request's own line to the Functions host's telemetry of it. The host logs the
/// handler's lines outside any invocation's scope (azure-functions-host,
/// `WorkerConsoleLogService.ProcessLogs`), so App Insights gives them no operation id; the line
/// carries them instead:
/// - `invocation_id`: the host's `x-azure-functions-invocationid` (`DefaultHttpWorkerService.
///   AddHeaders`, on forwarded requests too), which App Insights keeps on the host's `requests`
///   row as `customDimensions.InvocationId` (azure-webjobs-sdk, `ApplicationInsightsLogger.
///   ApplyScopeProperties`);
/// - `trace_id`: the W3C trace id of the caller's `traceparent`, which the host forwards as it
///   came and under which App Insights files the host's request (its `operation_Id`).
///
/// Neither is there on a local run without the host: the line then has neither field.
pub(crate) struct Correlation {
    invocation_id: Option<String>,
    trace_id: Option<String>,
}

impl Correlation {
    pub(crate) fn of(headers: &axum::http::HeaderMap) -> Correlation {
        let text = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
        let invocation_id = text(super::super::host::INVOCATION_ID)
            .filter(|id| {
                !id.is_empty()
                    && id.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
            })
            .map(str::to_owned);
        Correlation {
            invocation_id,
            trace_id: text("traceparent").and_then(trace_id).map(str::to_owned),
        }
    }
}

/// The trace id of a W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`), when it is one.
pub(super) fn trace_id(traceparent: &str) -> Option<&str> {
    let mut parts = traceparent.trim().split('-');
    let (_version, trace, parent) = (parts.next()?, parts.next()?, parts.next()?);
    let hex = |text: &str, length: usize| {
        text.len() == length && text.bytes().all(|byte| byte.is_ascii_hexdigit())
    };
    (hex(trace, 32) && hex(parent, 16) && trace.bytes().any(|byte| byte != b'0')).then_some(trace)
}

/// A count of hundredths, written as a decimal with two places (`12.50`): request units
/// without formatting a float on every request.
#[derive(Clone, Copy)]
pub(crate) struct Hundredths(pub(crate) u64);

impl std::fmt::Display for Hundredths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:02}", self.0 / 100, self.0 % 100)
    }
}

/// A count of tenths, written with one decimal place (`3.2`): the latency in milliseconds.
#[derive(Clone, Copy)]
pub(crate) struct Tenths(pub(crate) u64);

impl std::fmt::Display for Tenths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.0 / 10, self.0 % 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A percentile is never below the true one, and at most 19 % above it.
    #[test]
    fn a_percentile_is_within_a_quarter_octave_above() {
        for tenths in [0_u64, 1, 9, 10, 65, 999, 12_345, 600_000] {
            let mut latencies = Latencies::default();
            latencies.add(tenths);
            let read = latencies.percentile(0.95).0;
            assert!(read >= tenths, "{tenths}: {read}");
            assert!(read as f64 <= (tenths + 1) as f64 * 1.19, "{tenths}: {read}");
        }
        let mut latencies = Latencies::default();
        for tenths in 1..=100 {
            latencies.add(tenths * 10);
        }
        let median = latencies.percentile(0.5).0;
        assert!((500..=600).contains(&median), "{median}");
        assert_eq!(Latencies::default().percentile(0.5).0, 0);
    }

    /// Made-up paths and methods are counted under one name each: the minute's map stays as
    /// small as the router's routes.
    #[test]
    fn made_up_requests_do_not_grow_the_counts() {
        let log = RequestLog::default();
        let correlation = Correlation { invocation_id: None, trace_id: None };
        for n in 0..1_000 {
            let path = format!("/made-up/{n}");
            let method = Method::from_bytes(format!("M{n}").as_bytes()).unwrap();
            log.log(&Answered {
                method: &method,
                route: None,
                path: &path,
                status: 404,
                charge: Hundredths(0),
                operations: 0,
                partitions: "",
                latency: Tenths(3),
                correlation: &correlation,
            });
        }
        let minute = log.minute.lock().unwrap();
        assert_eq!(minute.routes.len(), 1);
        let counts = &minute.routes[UNMATCHED];
        assert_eq!(counts.len(), 1);
        assert_eq!(counts[0].1.requests, 1_000);
        assert_eq!(counts[0].1.statuses[4], 1_000);
    }
}
