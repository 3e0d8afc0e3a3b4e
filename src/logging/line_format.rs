//! The log's line format: `tracing-subscriber`'s layout, written with less work per line.

use std::fmt::{self, Write as _};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// The layout of `tracing-subscriber`'s default format without colour (`Format<Full>`:
/// `2026-11-25T18:30:00.123456Z INFO target: message key=value`), written with less work per
/// line. The date and time to the second are formatted once a second per thread. Integers,
/// strings and booleans go into the line directly instead of through `fmt::Debug`. The request
/// line is written on every request; the default formatter was most of its cost (BENCHMARKS.md,
/// "The front page against nginx"). A test holds the two layouts equal.
pub struct LineFormat;

impl<S, N> FormatEvent<S, N> for LineFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        context: &FmtContext<'_, S, N>,
        mut line: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
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
                if let Some(fields) = span
                    .extensions()
                    .get::<FormattedFields<N>>()
                    .filter(|fields| !fields.is_empty())
                {
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
    let since_epoch =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let second = since_epoch.as_secs();
    SECOND.with_borrow_mut(|(cached, text)| {
        if *cached != second {
            let time =
                time::OffsetDateTime::from_unix_timestamp(second.try_into().unwrap_or(i64::MAX))
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
        while let Some(at) = rest.find(|c: char| {
            matches!(c, '\x1b' | '\x07' | '\x08' | '\x0c' | '\x7f' | '\u{80}'..='\u{9f}')
        }) {
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
    use time::format_description::well_known::Rfc3339;

    use super::super::Recorded;
    use super::super::writer::batched;
    use super::LineFormat;

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
            tracing::error!(
                "a message with \x1b[31mcolour\x1b[0m, \u{85}, a \"quote\" and\nnewline"
            );
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
            let builder = tracing_subscriber::fmt()
                .with_max_level(tracing::Level::TRACE)
                .with_ansi(false)
                .with_writer(writer);
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
