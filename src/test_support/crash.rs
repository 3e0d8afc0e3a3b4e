//! Where a test can stop C1, as a crash would: right after the step named, with nothing after it
//! done (`tests/usernames_crash.rs`). The use case calls [`after`] between its steps; outside a
//! test's [`CRASH_AFTER`] scope it does nothing.

/// The steps of C1 (see `src/app/usernames.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Step 1: the new name is claimed.
    Claimed,
    /// Step 2: the user is written with it.
    UserWritten,
    /// Step 3: the old name is released.
    Released,
}

tokio::task_local! {
    /// The step after which C1 stops, within [`CRASH_AFTER`]`.scope(step, ...)`.
    pub static CRASH_AFTER: Step;
}

/// C1 stopped, as if the process had died after the step.
#[derive(Debug, thiserror::Error)]
#[error("crashed after {0:?}")]
pub(crate) struct Crashed(pub Step);

/// `Err`, as if the process had died, when the test asked to stop after `step`.
pub(crate) fn after(step: Step) -> Result<(), Crashed> {
    match CRASH_AFTER.try_with(|stop| *stop == step) {
        Ok(true) => Err(Crashed(step)),
        _ => Ok(()),
    }
}
