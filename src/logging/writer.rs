//! Log lines into one buffer in memory, which a thread of its own writes out a batch at a time.
//!
//! Every request logs a line, so the line's way out is on the request path. Written in place,
//! each line was a `write(2)` on a worker thread (a quarter of the front page's throughput).
//! Through `tracing-appender`'s channel, each line was still an allocation, a wake of its
//! writer thread and a `write(2)` there, on a machine with two cores. Here a line is a copy
//! into a buffer under a lock nobody holds for long. The writer wakes every [`FLUSH_EVERY`], or
//! at once when a batch reaches [`BATCH_BYTES`], and writes the whole batch in one call.
//!
//! Nothing is dropped: when the writer falls [`MAX_WAITING_BYTES`] behind (stdout blocked), a
//! line waits for room. Lines still in memory when the process is killed are lost, at most
//! [`FLUSH_EVERY`]'s worth (the Functions host ends its worker that way, with SIGKILL). An
//! orderly exit writes them ([`Flusher`]'s drop), waiting at most [`LAST_BATCH_WAIT`] for a
//! stdout that no longer takes them.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How long a line may wait in memory before it is written.
pub(crate) const FLUSH_EVERY: Duration = Duration::from_millis(50);
/// A batch this large is written at once, without waiting for [`FLUSH_EVERY`].
pub(crate) const BATCH_BYTES: usize = 64 * 1024;
/// How far the writer may fall behind before a new line waits for room.
pub(crate) const MAX_WAITING_BYTES: usize = 4 * 1024 * 1024;

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
    /// Says when the writer thread has written its last batch.
    done: std::sync::mpsc::Receiver<()>,
}

/// How long an exit waits for the last batch: a stdout nobody reads any more must not keep
/// the process from exiting (`tracing-appender`'s guard waits a second too).
pub(crate) const LAST_BATCH_WAIT: Duration = Duration::from_secs(1);

/// A writer of batches to `out` on a thread of its own, and the guard that writes the last
/// batch (keep it alive as long as lines are logged).
pub fn batched(out: impl Write + Send + 'static) -> (BatchedWriter, Flusher) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State { waiting: Vec::with_capacity(BATCH_BYTES), closed: false }),
        batch_ready: Condvar::new(),
        room: Condvar::new(),
    });
    let writer = shared.clone();
    let (finished, done) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("log-writer".to_owned())
        .spawn(move || {
            write_batches(&writer, out);
            let _ = finished.send(());
        })
        .expect("a thread for the log writer");
    (BatchedWriter { shared: shared.clone() }, Flusher { shared, done })
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
                .wait_timeout_while(state, FLUSH_EVERY, |state| {
                    !state.closed && state.waiting.len() < BATCH_BYTES
                })
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
        let _ = self.done.recv_timeout(LAST_BATCH_WAIT);
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::time::{Duration, Instant};

    use super::super::Recorded;
    use super::batched;

    #[test]
    fn every_line_arrives_whole_in_order_even_on_drop() {
        let out = Recorded::default();
        let (writer, flusher) = batched(out.clone());
        let lines: Vec<String> = (0..10_000).map(|n| format!("line {n}\n")).collect();
        let threads: Vec<_> = lines
            .chunks(2_500)
            .map(|chunk| {
                let mut writer = writer.clone();
                let chunk = chunk.to_vec();
                std::thread::spawn(move || {
                    chunk.iter().for_each(|line| writer.write_all(line.as_bytes()).unwrap())
                })
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

    /// A line that fills no batch is still written: the writer wakes by itself (every
    /// `FLUSH_EVERY`). The wait below only bounds a broken writer; it measures nothing.
    #[test]
    fn a_lone_line_is_written_without_more_lines_after_it() {
        let out = Recorded::default();
        let (mut writer, _flusher) = batched(out.clone());
        writer.write_all(b"alone\n").unwrap();
        let started = Instant::now();
        while out.0.lock().unwrap().0.is_empty() {
            assert!(started.elapsed() < Duration::from_secs(30), "the line was never written");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(out.0.lock().unwrap().0, b"alone\n");
    }

    /// A stdout that takes nothing (its reader gone, a full pipe) does not keep the handler
    /// from exiting: the drop gives up (after `LAST_BATCH_WAIT`) instead of waiting forever. The
    /// bound below only tells "gave up" from "hung"; it measures nothing.
    #[test]
    fn an_exit_does_not_wait_forever_for_a_stdout_that_takes_nothing() {
        struct Stuck;
        impl Write for Stuck {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                loop {
                    std::thread::park();
                }
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let (mut writer, flusher) = batched(Stuck);
        writer.write_all(b"never written\n").unwrap();
        let started = Instant::now();
        drop(flusher);
        assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    }
}
