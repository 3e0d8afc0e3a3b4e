//! Where log lines go, and how they are written. Every request logs a line, so a line's way
//! out is on the request path, and it is made cheap there:
//!
//! - [`writer`]: each line is copied into one buffer in memory, which a thread of its own writes
//!   out a batch at a time ([`batched`]).
//! - [`line_format`]: `tracing-subscriber`'s own layout, written with less work ([`LineFormat`]).

mod line_format;
mod writer;

pub use line_format::LineFormat;
pub use writer::{BATCH_BYTES, BatchedWriter, FLUSH_EVERY, Flusher, LAST_BATCH_WAIT, MAX_WAITING_BYTES, batched};

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
