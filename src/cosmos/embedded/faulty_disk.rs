//! A disk that fails as real ones do, for the tests (the `test-support` feature): it fills up,
//! and it holds commits back as a slow fsync does. It stands in the database's writer just before
//! `COMMIT` (the [`Faults`] hook), so that what the tests see is SQLite's own handling of a
//! failed or late commit.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use super::database::Faults;

/// A disk that can be full, and can hold commits until released (a slow fsync).
#[derive(Default)]
pub struct FaultyDisk {
    /// Every commit fails with `SQLITE_FULL`, as SQLite reports a full disk.
    pub full: AtomicBool,
    /// The next this many commits fail with `SQLITE_FULL`.
    fail_next: AtomicUsize,
    held: Mutex<bool>,
    released: Condvar,
    /// How many commits wait at the hold.
    waiting: AtomicUsize,
    /// How many commits came to the hook.
    commits: AtomicUsize,
}

impl FaultyDisk {
    /// Holds every commit at the hook from now on, as a slow fsync would, until released.
    pub fn hold_syncs(&self) {
        *self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = true;
    }
    /// Lets the held commits, and every later one, through.
    pub fn release_syncs(&self) {
        *self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = false;
        self.released.notify_all();
    }
    /// Fails the next `count` commits with `SQLITE_FULL`.
    pub fn fail_next_commits(&self, count: usize) {
        self.fail_next.store(count, Ordering::SeqCst);
    }
    /// How many commits were tried (the unit tests' count of a batch's commits).
    #[cfg(test)]
    pub(crate) fn commits(&self) -> usize {
        self.commits.load(Ordering::SeqCst)
    }
    /// Whether a commit is being held.
    pub fn holding(&self) -> bool {
        self.waiting.load(Ordering::SeqCst) > 0
    }
}

/// Releases held commits when a test ends, also by a failed assertion: the database's drop
/// waits for its writer.
pub struct ReleaseOnDrop(pub Arc<FaultyDisk>);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.0.release_syncs();
    }
}

impl Faults for FaultyDisk {
    fn before_commit(&self) -> rusqlite::Result<()> {
        self.commits.fetch_add(1, Ordering::SeqCst);
        let mut held = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while *held {
            self.waiting.fetch_add(1, Ordering::SeqCst);
            held = self.released.wait(held).unwrap_or_else(std::sync::PoisonError::into_inner);
            self.waiting.fetch_sub(1, Ordering::SeqCst);
        }
        drop(held);
        let fail_next = self
            .fail_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if self.full.load(Ordering::SeqCst) || fail_next {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
                Some("database or disk is full (injected)".into()),
            ));
        }
        Ok(())
    }
}
