//! How far a long command has got (`handler rebuild-copies`, `handler dead-letters replay`), on
//! stderr, and the command's log lines with it.
//!
//! On a terminal, one line redrawn in place (at most every [`TERMINAL_EVERY`]); a log line
//! written meanwhile clears it, and it is drawn again under the log line. Anywhere else (a
//! file, a pipe, a CI log) a plain line every [`PLAIN_EVERY`], so that a long run says it is
//! alive without filling the log. Either way the command ends with its summary, a line of its
//! own. Where the total is known (`import`, which has read and checked its whole file first),
//! the line starts with a [`bar`]. Where it is not (a change feed read from its beginning says
//! nothing of its length), it says the counts so far.
//!
//! Not indicatif, measured against it: three more crates, 13 s more to build, 220 KB more
//! binary. And it draws only the terminal's case. The plain lines every 10 s for a CI log or
//! Azure's log stream, and the log lines interleaved with the bar, would still be ours.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often the line is redrawn on a terminal, at most.
pub(crate) const TERMINAL_EVERY: Duration = Duration::from_millis(200);
/// How often a progress line is written anywhere else.
pub(crate) const PLAIN_EVERY: Duration = Duration::from_secs(10);

/// Erases the terminal's current line: back to its start, then clear to its end.
const ERASE_LINE: &[u8] = b"\r\x1b[K";

/// `done` of `total` as a bar of 20 cells and a percentage: `[#########-----------]  45 %`.
pub(crate) fn bar(done: usize, total: usize) -> String {
    const CELLS: usize = 20;
    let done = done.min(total);
    let filled = (done * CELLS).checked_div(total).unwrap_or(CELLS);
    let percent = (done * 100).checked_div(total).unwrap_or(100);
    format!("[{}{}] {percent:>3} %", "#".repeat(filled), "-".repeat(CELLS - filled))
}

/// Where progress and log lines go; clones share it. Give it to
/// `tracing_subscriber::fmt().with_writer(...)` for the log lines.
#[derive(Clone)]
pub(crate) struct Progress {
    /// When the command started: outside the lock, so that the line an [`Progress::update`]
    /// draws (under the lock) can say how long it has been.
    started: Instant,
    shared: Arc<Mutex<Shared>>,
}

struct Shared {
    out: Box<dyn Write + Send>,
    /// Redrawn in place (a terminal), or plain lines.
    terminal: bool,
    every: Duration,
    /// When progress was last written (`None`: never).
    last: Option<Instant>,
    /// The progress line on the terminal now, without its erase (`None`: none is).
    shown: Option<String>,
}

impl Progress {
    /// On stderr: redrawn in place when stderr is a terminal, plain lines otherwise.
    pub(crate) fn stderr() -> Progress {
        let terminal = std::io::stderr().is_terminal();
        Progress::new(
            std::io::stderr(),
            terminal,
            if terminal { TERMINAL_EVERY } else { PLAIN_EVERY },
        )
    }

    /// On `out`: a line redrawn at most every `every` when `terminal`, else a plain line every `every`.
    pub(crate) fn new(
        out: impl Write + Send + 'static,
        terminal: bool,
        every: Duration,
    ) -> Progress {
        let started = Instant::now();
        let shared = Shared { out: Box::new(out), terminal, every, last: None, shown: None };
        Progress { started, shared: Arc::new(Mutex::new(shared)) }
    }

    /// How long since the command started. Takes no lock: `line` of [`Progress::update`] may
    /// call it.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Shows `line()` if it is time. On a terminal, it shows at once the first time, then at
    /// most every `every`. Elsewhere, it writes a line of its own once `every` has passed since
    /// the start or the last. `line` runs under this progress's lock: it may call
    /// [`Progress::elapsed`], and nothing else of it.
    pub(crate) fn update(&self, line: impl FnOnce() -> String) {
        let mut shared = self.lock();
        let now = Instant::now();
        let since = now.duration_since(shared.last.unwrap_or(self.started));
        let due = match shared.last {
            None if shared.terminal => true,
            _ => since >= shared.every,
        };
        if !due {
            return;
        }
        shared.last = Some(now);
        let line = line();
        if shared.terminal {
            let _ = shared
                .out
                .write_all(ERASE_LINE)
                .and_then(|()| shared.out.write_all(line.as_bytes()));
            let _ = shared.out.flush();
            shared.shown = Some(line);
        } else {
            let _ = writeln!(shared.out, "{line}");
        }
    }

    /// Writes `text` as a line of its own (the summary), after the progress line is erased;
    /// no progress line is drawn after it until the next [`Progress::update`] that is due.
    pub(crate) fn line(&self, text: &str) {
        let mut shared = self.lock();
        shared.erase();
        let _ = writeln!(shared.out, "{text}");
        let _ = shared.out.flush();
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        // A panic while writing leaves nothing half-changed that matters: keep going.
        self.shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Shared {
    fn erase(&mut self) {
        if self.shown.take().is_some() {
            let _ = self.out.write_all(ERASE_LINE);
        }
    }
}

/// A log line: the progress line erased, the log line written, the progress line drawn again
/// below it.
impl Write for Progress {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut shared = self.lock();
        let shown = shared.shown.take();
        if shown.is_some() {
            shared.out.write_all(ERASE_LINE)?;
        }
        shared.out.write_all(bytes)?;
        if let Some(line) = shown {
            shared.out.write_all(line.as_bytes())?;
            shared.shown = Some(line);
        }
        shared.out.flush()?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.lock().out.flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Progress {
    type Writer = Progress;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_fills_with_what_is_done() {
        assert_eq!(bar(0, 10), "[--------------------]   0 %");
        assert_eq!(bar(9, 20), "[#########-----------]  45 %");
        assert_eq!(bar(20, 20), "[####################] 100 %");
        assert_eq!(bar(0, 0), "[####################] 100 %", "nothing to do is done");
    }

    #[derive(Clone, Default)]
    struct Recorded(Arc<Mutex<Vec<u8>>>);

    impl Write for Recorded {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Recorded {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    /// Elsewhere than a terminal: plain lines, none before `every` has passed, and the summary
    /// on a line of its own.
    #[test]
    fn plain_lines_come_no_sooner_than_every() {
        let out = Recorded::default();
        let progress = Progress::new(out.clone(), false, Duration::from_secs(3600));
        progress.update(|| "1 post".into());
        progress.line("done: 1 post");
        assert_eq!(out.text(), "done: 1 post\n");

        let out = Recorded::default();
        let progress = Progress::new(out.clone(), false, Duration::ZERO);
        progress.update(|| "1 post".into());
        progress.update(|| "2 posts".into());
        progress.line("done: 2 posts");
        assert_eq!(out.text(), "1 post\n2 posts\ndone: 2 posts\n");
    }

    /// The line may say how long the command has run: `handler rebuild-copies` hung on its
    /// first progress line (at once on a terminal, after 10 s elsewhere) while `elapsed` took the
    /// lock `update` held.
    #[test]
    fn a_line_may_say_how_long_it_has_been() {
        for terminal in [true, false] {
            let out = Recorded::default();
            let progress = Progress::new(out.clone(), terminal, Duration::ZERO);
            let (done, finished) = std::sync::mpsc::channel();
            let drawing = progress.clone();
            std::thread::spawn(move || {
                drawing
                    .update(|| format!("1 post in {:.0?}", drawing.elapsed().min(Duration::ZERO)));
                done.send(()).unwrap();
            });
            finished
                .recv_timeout(Duration::from_secs(30))
                .expect("update returned (it deadlocked before)");
            assert!(out.text().contains("1 post in 0ns"), "{}", out.text());
        }
    }

    /// On a terminal: drawn at once, redrawn in place, erased for a log line and drawn again
    /// under it, erased for the summary.
    #[test]
    fn log_lines_go_above_a_terminal_line_redrawn_in_place() {
        let out = Recorded::default();
        let mut progress = Progress::new(out.clone(), true, Duration::ZERO);
        progress.update(|| "1 post".into());
        progress.write_all(b"WARN kept\n").unwrap();
        progress.update(|| "2 posts".into());
        progress.line("done: 2 posts");
        progress.write_all(b"INFO after\n").unwrap();
        assert_eq!(
            out.text(),
            "\r\x1b[K1 post\r\x1b[KWARN kept\n1 post\r\x1b[K2 posts\r\x1b[Kdone: 2 posts\nINFO after\n"
        );

        // Not redrawn before `every` has passed (but drawn the first time at once).
        let out = Recorded::default();
        let progress = Progress::new(out.clone(), true, Duration::from_secs(3600));
        progress.update(|| "1 post".into());
        progress.update(|| "2 posts".into());
        assert_eq!(out.text(), "\r\x1b[K1 post");
    }
}
