//! Where log lines go, and how they are written. Every request logs a line, so a line's way
//! out is on the request path, and it is made cheap there:
//!
//! - [`writer`]: each line is copied into one buffer in memory, which a thread of its own writes
//!   out a batch at a time ([`writer::batched`]).
//! - [`line_format`]: `tracing-subscriber`'s own layout, written with less work ([`line_format::LineFormat`]).

pub(crate) mod line_format;
pub(crate) mod writer;

/// What the lines the handler writes under the Functions host weigh: each a row of Application
/// Insights, billed by its bytes. The longest line of each kind, in bytes as written (the
/// timestamp included, the newline not), for `handler cost`; `tests/telemetry.rs` holds each
/// bound against the real lines.
#[derive(Clone, Copy, Debug)]
pub struct BilledLines {
    /// `blog::http: requests`, a route's minute.
    pub minute: usize,
    /// `blog::http: request`, a request's own line, with the host's invocation id and a trace id.
    pub request: usize,
    /// `blog::changefeed: delivered`, a batch, with the host's invocation id.
    pub delivered: usize,
    /// `blog::changefeed: lag`, a function's minute.
    pub lag: usize,
    /// The most requests' own lines an instance writes a minute.
    pub own_lines_per_minute: u64,
}

/// The bounds [`BilledLines`] says.
pub const BILLED_LINES: BilledLines = BilledLines {
    minute: 330,
    request: 340,
    delivered: 280,
    lag: 180,
    own_lines_per_minute: crate::http::OWN_LINES_PER_MINUTE,
};

/// An error and every cause below it on one line, for a log line or a command's `error:` line:
/// an SDK error's transport failure or a file's I/O error is often two or three sources down.
/// Each error's message leaves its cause out, so that the chain joined shows each once.
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        text.push_str(": ");
        text.push_str(&next.to_string());
        cause = next.source();
    }
    text
}

/// What the writer thread wrote, and in how many calls: the tests' stdout.
#[cfg(test)]
#[derive(Clone, Default)]
struct Recorded(std::sync::Arc<std::sync::Mutex<(Vec<u8>, usize)>>);

#[cfg(test)]
impl std::io::Write for Recorded {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut recorded = self.0.lock().unwrap();
        recorded.0.extend_from_slice(bytes);
        recorded.1 += 1;
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
