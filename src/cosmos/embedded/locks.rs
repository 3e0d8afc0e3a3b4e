//! The embedded store's locks: what makes a write visible only once it is durable.
//!
//! The emulator shows a write as soon as it applies it, and the write reaches the disk only
//! afterwards, when its transaction commits. Strict two-phase locking closes that window. A
//! write holds its logical partition (container, partition key) exclusively from before the
//! emulator applies it until its commit is durable. If the commit is refused, it holds it until
//! the write is undone. A read or a single-partition query of that partition holds it shared,
//! so it waits. A query across partitions (and a read of a whole change feed) waits for every
//! pending write of its container: writes hold their container shared, such a reader holds it
//! exclusively. Writes to different partitions take different locks, so they overlap, and their
//! commits share one fsync.
//!
//! Locks are always taken container first, then partition, and no one holding a partition
//! waits for a container: no deadlock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

use crate::cosmos::Container;

type PartitionKey = (Container, Box<str>);

#[derive(Default)]
pub(crate) struct Locks {
    containers: [Arc<RwLock<()>>; 6],
    /// The partitions someone holds or waits for; an entry goes once no one does.
    partitions: Mutex<HashMap<PartitionKey, Arc<RwLock<()>>>>,
}

fn slot(container: Container) -> usize {
    match container {
        Container::Users => 0,
        Container::Posts => 1,
        Container::Feed => 2,
        Container::Leases => 3,
        Container::Tags => 4,
        Container::Words => 5,
    }
}

/// A partition held shared (a reader) or exclusively (a writer, with its container shared).
pub(crate) struct PartitionGuard {
    locks: Arc<Locks>,
    key: PartitionKey,
    shared: Option<OwnedRwLockReadGuard<()>>,
    exclusive: Option<OwnedRwLockWriteGuard<()>>,
    _container: Option<OwnedRwLockReadGuard<()>>,
}

/// A whole container, held while no write to it is pending.
pub(crate) struct ContainerGuard(#[allow(dead_code)] OwnedRwLockWriteGuard<()>);

impl Locks {
    fn partition(
        &self,
        container: Container,
        partition_key: &str,
    ) -> (PartitionKey, Arc<RwLock<()>>) {
        let key = (container, Box::from(partition_key));
        let lock =
            self.partitions.lock().expect("never poisoned").entry(key.clone()).or_default().clone();
        (key, lock)
    }

    /// Waits until no write to the partition is pending, and holds it until the guard drops.
    pub(crate) async fn read(
        self: &Arc<Self>,
        container: Container,
        partition_key: &str,
    ) -> PartitionGuard {
        let (key, lock) = self.partition(container, partition_key);
        let shared = lock.read_owned().await;
        PartitionGuard {
            locks: self.clone(),
            key,
            shared: Some(shared),
            exclusive: None,
            _container: None,
        }
    }

    /// Holds the partition for one write: until the guard drops, which the store does only once
    /// the write is durable or undone.
    pub(crate) async fn write(
        self: &Arc<Self>,
        container: Container,
        partition_key: &str,
    ) -> PartitionGuard {
        let whole = self.containers[slot(container)].clone().read_owned().await;
        let (key, lock) = self.partition(container, partition_key);
        let exclusive = lock.write_owned().await;
        PartitionGuard {
            locks: self.clone(),
            key,
            shared: None,
            exclusive: Some(exclusive),
            _container: Some(whole),
        }
    }

    /// How many hold or wait for the partition (readers and writers): for the tests, which must
    /// know that a read is waiting, not guess it from a pause.
    #[cfg(any(test, feature = "test-support"))]
    pub(crate) fn holders_and_waiters(&self, container: Container, partition_key: &str) -> usize {
        let partitions = self.partitions.lock().expect("never poisoned");
        // Each holder and waiter has a clone, taken under this mutex; the map has one more.
        partitions
            .get(&(container, Box::from(partition_key)))
            .map_or(0, |lock| Arc::strong_count(lock) - 1)
    }

    /// Waits until no write to `container` is pending, and keeps new ones waiting until the
    /// guard drops.
    pub(crate) async fn whole(&self, container: Container) -> ContainerGuard {
        ContainerGuard(self.containers[slot(container)].clone().write_owned().await)
    }
}

impl Drop for PartitionGuard {
    fn drop(&mut self) {
        drop(self.shared.take());
        drop(self.exclusive.take());
        let mut partitions = self.locks.partitions.lock().expect("never poisoned");
        // Clones are made only under this mutex: a count of one is the map's own.
        if partitions.get(&self.key).is_some_and(|lock| Arc::strong_count(lock) == 1) {
            partitions.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    #[tokio::test]
    async fn a_reader_waits_only_for_its_partitions_writer() {
        let locks = Arc::new(Locks::default());
        let writing = locks.write(Container::Posts, "p1").await;
        assert!(
            locks.read(Container::Posts, "p1").now_or_never().is_none(),
            "the written partition waits"
        );
        assert!(
            locks.read(Container::Posts, "p2").now_or_never().is_some(),
            "another partition does not"
        );
        assert!(
            locks.write(Container::Posts, "p2").now_or_never().is_some(),
            "nor does another writer"
        );
        assert!(
            locks.read(Container::Users, "p1").now_or_never().is_some(),
            "nor the same key in another container"
        );
        assert!(
            locks.whole(Container::Posts).now_or_never().is_none(),
            "a reader of the whole container waits"
        );
        let waiting = tokio::spawn({
            let locks = locks.clone();
            async move { drop(locks.read(Container::Posts, "p1").await) }
        });
        while locks.holders_and_waiters(Container::Posts, "p1") < 2 {
            tokio::task::yield_now().await;
        }
        drop(writing);
        waiting.await.unwrap();
        assert_eq!(locks.holders_and_waiters(Container::Posts, "p1"), 0);
        assert!(locks.read(Container::Posts, "p1").now_or_never().is_some());
        assert!(locks.whole(Container::Posts).now_or_never().is_some());
        assert!(
            locks.partitions.lock().unwrap().is_empty(),
            "nothing is kept for partitions no one holds"
        );
    }
}
