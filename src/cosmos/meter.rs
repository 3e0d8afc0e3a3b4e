//! Counts what each HTTP request costs in Cosmos DB: request units and operations.
//!
//! A task-local meter, so the store can record every operation without a context parameter
//! threaded through every call. Work that leaves the request's task (the script engine runs on
//! a blocking thread) carries the meter along with [`Meter::current`] and [`Meter::enter`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

tokio::task_local! {
    static METER: Arc<Meter>;
}

#[derive(Default, Debug)]
pub struct Meter {
    /// Request units, in thousandths, so that an atomic integer can sum them.
    milli_charge: AtomicU64,
    operations: AtomicU64,
}

impl Meter {
    /// Runs `work` with this meter counting its Cosmos operations.
    pub async fn measure<F: Future>(self: Arc<Self>, work: F) -> F::Output {
        METER.scope(self, work).await
    }

    /// Runs the synchronous `work` with this meter current.
    pub fn enter<R>(self: Arc<Self>, work: impl FnOnce() -> R) -> R {
        METER.sync_scope(self, work)
    }

    /// The meter of the current request, if any.
    pub fn current() -> Option<Arc<Meter>> {
        METER.try_with(Arc::clone).ok()
    }

    /// Records one operation that cost `charge` RU on the current request's meter.
    pub fn record(charge: f64) {
        let _ = METER.try_with(|meter| {
            meter.milli_charge.fetch_add((charge * 1000.0).round() as u64, Ordering::Relaxed);
            meter.operations.fetch_add(1, Ordering::Relaxed);
        });
    }

    /// Request units and operations so far.
    pub fn totals(&self) -> (f64, u64) {
        (self.milli_charge.load(Ordering::Relaxed) as f64 / 1000.0, self.operations.load(Ordering::Relaxed))
    }
}
