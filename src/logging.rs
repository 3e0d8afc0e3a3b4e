//! Where log lines go: into one buffer in memory, which a thread of its own writes out a batch at
//! a time.
//!
//! Every request logs a line, so the line's way out is on the request path. Written in place,
//! each line was a `write(2)` on a worker thread (a quarter of the front page's throughput);
//! through `tracing-appender`'s channel, each line was still an allocation, a wake of its writer
//! thread and a `write(2)` there, on a machine with two cores. Here a line is a copy into a
//! buffer under a lock nobody holds for long; the writer wakes every [`FLUSH_EVERY`], or at once
//! when a batch reaches [`BATCH_BYTES`], and writes the whole batch in one call.
//!
//! Nothing is dropped: when the writer falls [`MAX_WAITING_BYTES`] behind (stdout blocked), a
//! line waits for room. Lines still in memory when the process is killed are lost, at most
//! [`FLUSH_EVERY`]'s worth; an orderly exit writes them ([`Flusher`]'s drop).

use std::fmt::{self, Write as _};
use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// How long a line may wait in memory before it is written.
pub const FLUSH_EVERY: Duration = Duration::from_millis(50);
/// A batch this large is written at once, without waiting for [`FLUSH_EVERY`].
pub const BATCH_BYTES: usize = 64 * 1024;
/// How far the writer may fall behind before a new line waits for room.
pub const MAX_WAITING_BYTES: usize = 4 * 1024 * 1024;

struct Shared {
    state: Mutex<State>,
    /// The writer waits here for a full batch, the end, or [`FLUSH_EVERY`].
    batch_ready: Condvar,
    /// A line waits here for room when the writer is [`MAX_WAITING_BYTES`] behind.
    room: Condvar,
}

#[derive(Default)]
struct State {
    waiting: Vec<u8>,
    closed: bool,
}

/// The `MakeWriter` to give `tracing_subscriber::fmt().with_writer(...)`: each event's line is
/// one `write` into the shared buffer.
#[derive(Clone)]
pub struct BatchedWriter {
    shared: Arc<Shared>,
}

/// Writes what is waiting when dropped, and stops the writer thread.
pub struct Flusher {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// A writer of batches to `out` on a thread of its own, and the guard that writes the last
/// batch (keep it alive as long as lines are logged).
pub fn batched(out: impl Write + Send + 'static) -> (BatchedWriter, Flusher) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State { waiting: Vec::with_capacity(BATCH_BYTES), closed: false }),
        batch_ready: Condvar::new(),
        room: Condvar::new(),
    });
    let writer = shared.clone();
    let thread = std::thread::Builder::new()
        .name("log-writer".to_owned())
        .spawn(move || write_batches(&writer, out))
        .expect("a thread for the log writer");
    (BatchedWriter { shared: shared.clone() }, Flusher { shared, thread: Some(thread) })
}

/// The writer thread: takes the waiting lines whole, leaving an empty buffer of the same
/// capacity in their place, and writes them outside the lock.
fn write_batches(shared: &Shared, mut out: impl Write) {
    let mut batch = Vec::with_capacity(BATCH_BYTES);
    loop {
        let closed = {
            let state = lock(&shared.state);
            let (mut state, _) = shared
                .batch_ready
                .wait_timeout_while(state, FLUSH_EVERY, |state| !state.closed && state.waiting.len() < BATCH_BYTES)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            std::mem::swap(&mut state.waiting, &mut batch);
            state.closed
        };
        shared.room.notify_all();
        if !batch.is_empty() {
            // Nowhere to report a failed write of the log but the log: the lines are dropped.
            let _ = out.write_all(&batch).and_then(|()| out.flush());
            batch.clear();
        }
        if closed {
            return;
        }
    }
}

/// The lock, even if a thread panicked while holding it: the buffer is only ever appended to
/// or swapped whole, so it is never left half-changed.
fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Write for BatchedWriter {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        let state = lock(&self.shared.state);
        let mut state = self
            .shared
            .room
            .wait_while(state, |state| !state.closed && state.waiting.len() >= MAX_WAITING_BYTES)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = state.waiting.len();
        state.waiting.extend_from_slice(line);
        // Only the line that fills a batch wakes the writer; the others leave it asleep.
        if before < BATCH_BYTES && state.waiting.len() >= BATCH_BYTES {
            self.shared.batch_ready.notify_one();
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for BatchedWriter {
    type Writer = BatchedWriter;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        lock(&self.shared.state).closed = true;
        self.shared.batch_ready.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The layout of `tracing-subscriber`'s default format without colour (`Format<Full>`:
/// `2026-11-25T18:30:00.123456Z  INFO target: message key=value`), written with less work per
/// line: the date and time to the second are formatted once a second per thread, and integers,
/// strings and booleans go into the line directly instead of through `fmt::Debug`. The request
/// line is written on every request; the default formatter was most of its cost (BENCHMARKS.md,
/// "The front page against nginx"). A test holds the two layouts equal.
pub struct LineFormat;

impl<S, N> FormatEvent<S, N> for LineFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, context: &FmtContext<'_, S, N>, mut line: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        write_timestamp(&mut line)?;
        let metadata = event.metadata();
        line.write_str(match *metadata.level() {
            Level::TRACE => "TRACE ",
            Level::DEBUG => "DEBUG ",
            Level::INFO => " INFO ",
            Level::WARN => " WARN ",
            Level::ERROR => "ERROR ",
        })?;
        if let Some(scope) = context.event_scope() {
            let mut any = false;
            for span in scope.from_root() {
                line.write_str(span.metadata().name())?;
                if let Some(fields) = span.extensions().get::<FormattedFields<N>>().filter(|fields| !fields.is_empty()) {
                    write!(line, "{{{fields}}}")?;
                }
                line.write_char(':')?;
                any = true;
            }
            if any {
                line.write_char(' ')?;
            }
        }
        line.write_str(metadata.target())?;
        line.write_str(": ")?;
        let mut fields = Fields { line: &mut line, first: true, result: Ok(()) };
        event.record(&mut fields);
        fields.result?;
        line.write_char('\n')
    }
}

/// `2026-11-25T18:30:00.123456Z ` (with the space after it), as `tracing-subscriber`'s
/// `SystemTime` writes it.
fn write_timestamp(line: &mut Writer<'_>) -> fmt::Result {
    thread_local! {
        /// The second last formatted on this thread, and its text to the second.
        static SECOND: std::cell::RefCell<(u64, String)> = const { std::cell::RefCell::new((u64::MAX, String::new())) };
    }
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let second = since_epoch.as_secs();
    SECOND.with_borrow_mut(|(cached, text)| {
        if *cached != second {
            let time = time::OffsetDateTime::from_unix_timestamp(second.try_into().unwrap_or(i64::MAX))
                .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
            text.clear();
            write!(
                text,
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
                time.year(),
                u8::from(time.month()),
                time.day(),
                time.hour(),
                time.minute(),
                time.second()
            )?;
            *cached = second;
        }
        line.write_str(text)
    })?;
    write!(line, ".{:06}Z ", since_epoch.subsec_micros())
}

/// Writes an event's fields as `DefaultFields` does: the message first and bare, the others as
/// ` name=value`, strings quoted and escaped as `Debug` writes them.
struct Fields<'a, 'w> {
    line: &'a mut Writer<'w>,
    first: bool,
    result: fmt::Result,
}

impl Fields<'_, '_> {
    /// The separator and `name=`; `None` for the message, which is written bare.
    fn start(&mut self, field: &Field) -> fmt::Result {
        if !std::mem::take(&mut self.first) {
            self.line.write_char(' ')?;
        }
        let name = field.name();
        if name != "message" {
            self.line.write_str(name.strip_prefix("r#").unwrap_or(name))?;
            self.line.write_char('=')?;
        }
        Ok(())
    }

    fn write(&mut self, field: &Field, value: impl FnOnce(&mut Writer<'_>) -> fmt::Result) {
        if self.result.is_ok() {
            self.result = self.start(field).and_then(|()| value(self.line));
        }
    }
}

impl Visit for Fields<'_, '_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.write(field, |line| write!(Escaping(line), "{value}"));
        } else {
            self.write(field, |line| write!(line, "{value:?}"));
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.write(field, |line| write!(line, "{value}"));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.write(field, |line| write!(line, "{value}"));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.write(field, |line| line.write_str(if value { "true" } else { "false" }));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.write(field, |line| {
            write!(Escaping(&mut *line), "{value}")?;
            let mut source = value.source();
            if source.is_some() {
                write!(line, " {}.sources=[", field.name())?;
                let mut first = true;
                while let Some(cause) = source {
                    if !std::mem::take(&mut first) {
                        line.write_str(", ")?;
                    }
                    write!(Escaping(&mut *line), "{cause}")?;
                    source = cause.source();
                }
                line.write_char(']')?;
            }
            Ok(())
        });
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.write(field, |line| write!(Escaping(line), "{value:?}"));
        } else {
            self.write(field, |line| write!(line, "{value:?}"));
        }
    }
}

/// Writes text with the characters that could steer a terminal escaped, as `tracing-subscriber`
/// escapes messages (its `fmt::format::escape`): a logged message cannot forge or hide lines.
struct Escaping<'a, 'w>(&'a mut Writer<'w>);

impl fmt::Write for Escaping<'_, '_> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let mut rest = text;
        while let Some(at) = rest.find(|c: char| matches!(c, '\x1b' | '\x07' | '\x08' | '\x0c' | '\x7f' | '\u{80}'..='\u{9f}')) {
            self.0.write_str(&rest[..at])?;
            let control = rest[at..].chars().next().expect("found at this index");
            if (control as u32) < 0x80 {
                write!(self.0, "\\x{:02x}", control as u32)?;
            } else {
                write!(self.0, "\\u{{{:x}}}", control as u32)?;
            }
            rest = &rest[at + control.len_utf8()..];
        }
        self.0.write_str(rest)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use time::format_description::well_known::Rfc3339;

    use super::{FLUSH_EVERY, LineFormat, batched};

    /// What the writer thread wrote, and in how many calls.
    #[derive(Clone, Default)]
    struct Recorded(Arc<Mutex<(Vec<u8>, usize)>>);

    impl Write for Recorded {
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

    #[test]
    fn lines_arrive_whole_in_order_and_in_few_writes_and_the_last_on_drop() {
        let out = Recorded::default();
        let (writer, flusher) = batched(out.clone());
        let lines: Vec<String> = (0..10_000).map(|n| format!("line {n}\n")).collect();
        let threads: Vec<_> = lines
            .chunks(2_500)
            .map(|chunk| {
                let mut writer = writer.clone();
                let chunk = chunk.to_vec();
                std::thread::spawn(move || chunk.iter().for_each(|line| writer.write_all(line.as_bytes()).unwrap()))
            })
            .collect();
        threads.into_iter().for_each(|thread| thread.join().unwrap());
        drop(flusher);
        let (written, writes) = out.0.lock().unwrap().clone();
        let mut written: Vec<&str> = std::str::from_utf8(&written).unwrap().lines().collect();
        assert_eq!(written.len(), 10_000, "every line, none torn");
        assert!(writes < 100, "{writes} writes for 10,000 lines");
        written.sort_by_key(|line| line[5..].parse::<u32>().unwrap());
        assert!(written.iter().zip(&lines).all(|(written, line)| *written == line.trim_end()));
    }

    #[test]
    fn a_lone_line_is_written_within_the_flush_interval() {
        let out = Recorded::default();
        let (mut writer, _flusher) = batched(out.clone());
        writer.write_all(b"alone\n").unwrap();
        let started = Instant::now();
        while out.0.lock().unwrap().0.is_empty() {
            assert!(started.elapsed() < FLUSH_EVERY * 40, "the line was never written");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(out.0.lock().unwrap().0, b"alone\n");
    }

    /// Logs the same events, spans and fields of every kind through `subscriber`.
    fn written_by(subscriber: impl tracing::Subscriber + Send + Sync) {
        tracing::subscriber::with_default(subscriber, || {
            let error = std::io::Error::other(std::fmt::Error);
            let outer = tracing::info_span!("delivery", function = "PostsChangeFeed", lease = 3);
            let _outer = outer.enter();
            let inner = tracing::warn_span!("batch");
            let _inner = inner.enter();
            tracing::info!(target: "blog::http", method = %"GET", route = "/posts/{postId}", status = 200_u64, ru = format_args!("{:.2}", 1.25), operations = 2, partitions = "posts=1", latency_ms = 0.5_f64, "request");
            tracing::warn!(
                attempt = -1_i64,
                retry = true,
                error = &error as &(dyn std::error::Error + 'static),
                "cannot reach Cosmos DB yet"
            );
            tracing::error!("a message with \x1b[31mcolour\x1b[0m, \u{85}, a \"quote\" and\nnewline");
            tracing::debug!(r#type = "post", "raw identifier");
        });
    }

    /// `LineFormat` writes what `tracing-subscriber`'s own `Format<Full>` writes without colour,
    /// event for event (the timestamps aside, which differ by when they were taken): spans with
    /// their fields, levels, targets, the message escaped, and every kind of field.
    #[test]
    fn the_line_format_writes_what_the_default_format_writes() {
        let captured = |format: bool| {
            let out = Recorded::default();
            let (writer, flusher) = batched(out.clone());
            let builder = tracing_subscriber::fmt().with_max_level(tracing::Level::TRACE).with_ansi(false).with_writer(writer);
            if format {
                written_by(builder.event_format(LineFormat).finish());
            } else {
                written_by(builder.finish());
            }
            drop(flusher);
            String::from_utf8(out.0.lock().unwrap().0.clone()).unwrap()
        };
        let (ours, theirs) = (captured(true), captured(false));
        // A line that starts with a timestamp, split into its second and the rest; a message's
        // own newline starts a line without one.
        let split = |line: &str| match line.split_once(' ') {
            Some((time, rest)) if time::OffsetDateTime::parse(time, &Rfc3339).is_ok() => {
                assert!(time.len() == 27 && time.ends_with('Z'), "{time}");
                (time[..19].to_owned(), rest.to_owned())
            }
            _ => (String::new(), line.to_owned()),
        };
        assert_eq!(ours.lines().count(), 5, "{ours}");
        assert_eq!(ours.lines().count(), theirs.lines().count(), "{theirs}");
        for (ours, theirs) in ours.lines().zip(theirs.lines()) {
            let ((our_second, ours), (their_second, theirs)) = (split(ours), split(theirs));
            assert_eq!(ours, theirs);
            assert!(our_second <= their_second);
        }
        assert!(ours.contains("\\x1b[31mcolour"), "control characters are escaped: {ours}");
    }
}
