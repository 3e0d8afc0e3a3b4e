//! Counts what each HTTP request costs in Cosmos DB: request units, operations, and the logical
//! partitions they touched.
//!
//! A task-local meter, so the store can record every operation without a context parameter
//! threaded through every call. Work that leaves the request's task (the script engine runs on
//! a blocking thread) carries the meter along with [`Meter::current`] and [`Meter::enter`].

use std::collections::BTreeSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::Container;

tokio::task_local! {
    static METER: Arc<Meter>;
}

/// Where one Cosmos operation ran.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Scope {
    /// One logical partition of a container (a point operation, a batch, a script, a
    /// single-partition query).
    Partition(Container, String),
    /// Every partition of a container: a cross-partition query or a change-feed read.
    AllPartitions(Container),
}

impl Scope {
    /// One logical partition of `container`.
    pub(crate) fn partition(container: Container, partition_key: &str) -> Scope {
        Scope::Partition(container, partition_key.to_owned())
    }

    fn container(&self) -> Container {
        match self {
            Scope::Partition(container, _) | Scope::AllPartitions(container) => *container,
        }
    }
}

/// What a request's Cosmos DB calls cost (request units, operations, partitions), added up as they are made.
#[derive(Default, Debug)]
pub struct Meter {
    /// Request units, in thousandths, so that an atomic integer can sum them.
    milli_charge: AtomicU64,
    operations: AtomicU64,
    /// Of the operations, the queries: what a request costs depends on how many reads were
    /// queries (6–17 RU on Cosmos DB) and how many point reads (1 RU).
    queries: AtomicU64,
    touched: Mutex<BTreeSet<Scope>>,
}

impl Meter {
    /// Runs `work` with this meter counting its Cosmos operations.
    pub async fn measure<F: Future>(self: Arc<Self>, work: F) -> F::Output {
        METER.scope(self, work).await
    }

    /// Runs the synchronous `work` with this meter current.
    pub(crate) fn enter<R>(self: Arc<Self>, work: impl FnOnce() -> R) -> R {
        METER.sync_scope(self, work)
    }

    /// The meter of the current request, if any.
    pub(crate) fn current() -> Option<Arc<Meter>> {
        METER.try_with(Arc::clone).ok()
    }

    /// Records one operation in `scope` that cost `charge` RU on the current request's meter.
    pub(crate) fn record(scope: Scope, charge: f64) {
        let _ = METER.try_with(|meter| {
            meter.milli_charge.fetch_add((charge * 1000.0).round() as u64, Ordering::Relaxed);
            meter.operations.fetch_add(1, Ordering::Relaxed);
            meter.touched.lock().expect("the meter's lock is never poisoned").insert(scope);
        });
    }

    /// Records one query's page in `scope` that cost `charge` RU: an operation, counted among the
    /// queries too.
    pub(crate) fn record_query(scope: Scope, charge: f64) {
        Meter::record(scope, charge);
        let _ = METER.try_with(|meter| meter.queries.fetch_add(1, Ordering::Relaxed));
    }

    /// How many of the operations so far were queries.
    pub(crate) fn queries(&self) -> u64 {
        self.queries.load(Ordering::Relaxed)
    }

    /// Request units and operations so far.
    pub fn totals(&self) -> (f64, u64) {
        (
            self.milli_charge.load(Ordering::Relaxed) as f64 / 1000.0,
            self.operations.load(Ordering::Relaxed),
        )
    }

    /// The partitions touched so far, per container.
    pub fn partitions(&self) -> Partitions {
        let touched = self.touched.lock().expect("the meter's lock is never poisoned");
        let mut per_container: Vec<(Container, Option<usize>)> = Vec::new();
        for scope in touched.iter() {
            let count = match scope {
                Scope::Partition(..) => Some(1),
                Scope::AllPartitions(_) => None,
            };
            match per_container.last_mut() {
                Some((container, total)) if *container == scope.container() => {
                    *total = total.zip(count).map(|(total, count)| total + count);
                }
                _ => per_container.push((scope.container(), count)),
            }
        }
        Partitions(per_container)
    }
}

/// How many logical partitions of each container a request touched; `None` for all of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Partitions(pub Vec<(Container, Option<usize>)>);

/// `users=1, posts=1`, or `posts=*` for a query across every partition: the value of the
/// `x-cosmos-partitions` response header. Empty when nothing was touched.
impl fmt::Display for Partitions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, (container, count)) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str(", ")?;
            }
            match count {
                Some(count) => write!(f, "{}={count}", container.name())?,
                None => write!(f, "{}=*", container.name())?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counts_distinct_partitions_per_container() {
        let meter = Arc::new(Meter::default());
        meter
            .clone()
            .measure(async {
                Meter::record(Scope::partition(Container::Users, "alice"), 1.0);
                Meter::record(Scope::partition(Container::Posts, "p1"), 2.0);
                Meter::record(Scope::partition(Container::Posts, "p1"), 3.0);
                Meter::record(Scope::partition(Container::Users, "bob"), 1.0);
            })
            .await;
        assert_eq!(meter.totals(), (7.0, 4));
        assert_eq!(meter.partitions().to_string(), "users=2, posts=1");
    }

    #[tokio::test]
    async fn a_query_across_partitions_is_all_of_them() {
        let meter = Arc::new(Meter::default());
        meter
            .clone()
            .measure(async {
                Meter::record(Scope::partition(Container::Posts, "p1"), 1.0);
                Meter::record(Scope::AllPartitions(Container::Posts), 1.0);
            })
            .await;
        assert_eq!(meter.partitions().to_string(), "posts=*");
        assert_eq!(Meter::default().partitions().to_string(), "");
    }
}
